#!/bin/sh
# ansible-test sanity of the collection rdmamanager.rdma, on the Python that runs ansible-core,
# from the local environment (no container). Extra arguments go to ansible-test (--test NAME,
# -v, ...).
#
# ansible-test builds a virtual environment per sanity test, bootstrapping pip with a script it
# downloads from its own site into ~/.ansible/test/cache/get_pip_<version>.py. That site may be
# unreachable where the package index is not (CI mirrors, proxies): the cache is seeded with
# get-pip-from-debian.py, which installs the same pinned packages with the pip wheel of
# python3-pip-whl. HOME is the directory ANSIBLE_TEST_HOME names (default: the workspace's
# target/ansible-test-home), so the environments are kept between runs and the user's own
# ~/.ansible is not touched.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
collection="$here/../ansible_collections/rdmamanager/rdma"
export HOME="${ANSIBLE_TEST_HOME:-$repo/target/ansible-test-home}"

# "python version = 3.11.2 (main, ...) [GCC 12.2.0] (/usr/bin/python3)"
info=$(ansible --version | sed -n 's/^ *python version = //p')
version=$(printf '%s\n' "$info" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
python=$(printf '%s\n' "$info" | sed -n 's/.*(\([^()]*\))$/\1/p')
[ -n "$version" ] && [ -n "$python" ] || { echo "cannot read ansible's Python from: $info" >&2; exit 1; }

# Every pip version this ansible-test bootstraps (one per Python version family).
requirements=$("$python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
for pip in $(sed -n "s/.*pip='\([0-9.]*\)'.*/\1/p" "$requirements" | sort -u); do
    seeded="$cache/get_pip_$(printf '%s' "$pip" | tr . _).py"
    [ -e "$seeded" ] || cp "$here/get-pip-from-debian.py" "$seeded"
done

cd "$collection"
exec ansible-test sanity --local --python "$version" --python-interpreter "$python" "$@"
