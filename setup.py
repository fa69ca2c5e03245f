"""Builds the extension module streamline._streamline with the project's CMake (see pyproject.toml)."""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.abspath(os.environ.get("SL_BUILD_DIR") or os.path.join(SOURCE, "build-python"))
        if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
            subprocess.run(["cmake", "-S", SOURCE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DSL_PYTHON=ON",
                            f"-DPython3_EXECUTABLE={sys.executable}", "-DSL_BUILD_TESTS=OFF",
                            "-DSL_BUILD_BENCH=OFF"], check=True)
        subprocess.run(["cmake", "--build", build, "--target", "_streamline", "-j", str(os.cpu_count() or 1)],
                       check=True)
        built = os.path.join(build, "python", "streamline", os.path.basename(self.get_ext_filename(ext.name)))
        if not os.path.isfile(built):
            sys.exit(f"setup.py: {built} was not built (is this build tree for another Python?)")
        out = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copy(built, out)


setup(ext_modules=[CMakeExtension("streamline._streamline")], cmdclass={"build_ext": CMakeBuild})
