"""tlc.load and tlc.compile_source given what is not a path or a text (tlc/api.py): a
pathlib.Path raised AttributeError ("'PosixPath' object has no attribute 'startswith'"), as
did None and numbers; bytes a TypeError; a NUL in the name os.open's ValueError."""
from pathlib import Path

import pytest

import tlc

VECTOR_ADD = Path(__file__).resolve().parents[1] / "examples" / "vector_add.tl"


def test_a_path_object_loads_as_its_text():
    assert tlc.load(VECTOR_ADD, target="interp").vector_add.name == "vector_add"
    assert tlc.compile_source("x = 1\n", target="interp", path=None) is not None


@pytest.mark.parametrize("given,name", [(None, "NoneType"), (3, "int"), (b"a.tl", "bytes")])
def test_what_is_not_a_path_is_refused_by_name(given, name):
    with pytest.raises(tlc.TlcError) as e:
        tlc.load(given, target="interp")
    assert str(e.value) == ("tlc.load takes the path of a .tl file (a str or a pathlib.Path) or the name of a std "
                            f"module ('std.nn'), not {name}")


def test_compile_sources_path_that_is_not_a_path_is_refused_in_its_own_words():
    with pytest.raises(tlc.TlcError) as e:
        tlc.compile_source("x = 1\n", target="interp", path=3)
    assert str(e.value) == "tlc.compile_source's path= names the text in diagnostics: a str or a pathlib.Path, not int"


def test_a_nul_in_the_name_is_a_source_error():
    with pytest.raises(tlc.TlcError) as e:
        tlc.load("/tmp/a\0b.tl", target="interp")
    assert str(e.value) == "cannot read '/tmp/a\\x00b.tl': embedded null byte"


def test_what_is_not_a_text_is_refused_by_name():
    with pytest.raises(tlc.TlcError) as e:
        tlc.compile_source(b"x = 1\n", target="interp")
    assert str(e.value) == ("tlc.compile_source takes the text of a module as a str, not bytes (decode it: "
                            "text.decode('utf-8'))")
    with pytest.raises(tlc.TlcError) as e:
        tlc.compile_source(None, target="interp")
    assert str(e.value) == "tlc.compile_source takes the text of a module as a str, not NoneType"
