"""Where std.nn lives, for the codegen tests."""
from importlib import resources

NN_PATH = str(resources.files("tlc").joinpath("stdlib/nn.tl"))
