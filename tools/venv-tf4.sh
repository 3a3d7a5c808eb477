#!/bin/sh
# A second virtual environment, .venv-tf4, with transformers 4.51.3 (constraints-tf4.txt) for the impl claims' tests
# on a 4.x release.  It holds only transformers and the packages its release needs at other versions; everything
# else (torch, the project installed in editable mode, the test tools) comes from the main environment .venv, added
# to its path by a .pth file (site.addsitedir, so .venv's own .pth files, such as the editable install, apply too).
# .venv-tf4's own packages come first on its path.  Run from the repository root after the main install; about 15 s.
set -eu
test -x .venv/bin/python || { echo "venv-tf4: create the main environment .venv first (README)" >&2; exit 2; }
MAIN_SITE=$(.venv/bin/python -c "import site; print(site.getsitepackages()[0])")
rm -rf .venv-tf4
"$(.venv/bin/python -c 'import sys, os; print(os.path.join(sys.base_prefix, "bin", "python3"))')" -m venv .venv-tf4
.venv-tf4/bin/python -m pip install -q --no-deps -r constraints-tf4.txt
SITE=$(.venv-tf4/bin/python -c "import site; print(site.getsitepackages()[0])")
echo "import site; site.addsitedir('$MAIN_SITE')" > "$SITE/zz_verify_main_env.pth"
.venv-tf4/bin/python -c "import transformers, verify; print('venv-tf4: transformers', transformers.__version__, 'with verify from', verify.__file__)"
