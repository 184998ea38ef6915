"""Where std.nn lives, for the codegen tests."""
from tlc import package_data

NN_PATH = str(package_data.stdlib().joinpath("nn.tl"))
