"""The licence the project states (Apache-2.0) is the one its files carry: LICENSE holds the
standard text and pyproject.toml names it as an SPDX expression and ships the file."""
import hashlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# sha256 of the Apache License 2.0 as the ASF publishes it (apache.org/licenses/LICENSE-2.0.txt)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_license_file_is_the_standard_apache_2_text():
    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256


def test_pyproject_names_the_license_and_ships_the_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
