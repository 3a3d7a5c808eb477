#!/bin/sh
# Install Coq 8.16 and its libraries for the kernel layer (Debian/Ubuntu, as root), once.
# Never fails: without apt-get or root rights it says so, and verify runs every layer but the kernel
# (its evidence is 'skipped' with this install line; under CI=1 the kernel tests fail instead of skipping).
PKGS="coq libcoq-mathcomp-ssreflect libcoq-interval libcoq-coquelicot libcoq-flocq"
if command -v coqc >/dev/null 2>&1 && command -v coqchk >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-coq: no apt-get here; install Coq 8.16 with MathComp, Coquelicot, Flocq and Coq-Interval yourself for the kernel layer" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
        echo "install-coq: not root; run: apt-get update && apt-get install -y $PKGS" >&2
        exit 0
    fi
fi
echo "install-coq: apt-get install $PKGS (about 30 s)" >&2
if $SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $PKGS >/dev/null; then
    coqc --version | head -1 >&2
else
    echo "install-coq: apt-get failed; the kernel layer will be skipped" >&2
fi
exit 0
