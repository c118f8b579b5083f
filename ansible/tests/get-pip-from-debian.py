# Stands in for the get-pip.py bootstrap script ansible-test downloads into a new virtual
# environment (~/.ansible/test/cache/get_pip_<version>.py), where its download site cannot be
# reached: like get-pip.py it installs the packages named on its command line (pip, setuptools,
# wheel at ansible-test's pinned versions), running pip from the wheel Debian ships in
# python3-pip-whl. The packages themselves still come from the package index.
import glob
import sys

wheels = sorted(glob.glob("/usr/share/python-wheels/pip-*.whl"))
if not wheels:
    sys.exit("no pip wheel in /usr/share/python-wheels (Debian package python3-pip-whl)")
sys.path.insert(0, wheels[-1])

from pip._internal.cli.main import main  # noqa: E402

sys.exit(main(["install"] + sys.argv[1:]))
