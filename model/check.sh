#!/bin/sh
# Check the protocol model with SPIN (model/README.md):
#   model/check.sh                     the design: must end with "errors: 0"
#   model/check.sh -DWORKER_CLOCKS     today's clocks: must find a second remote job
#   model/check.sh -DJUDGED_AT_ANSWER  a miss judged at its answer: must find one too
#   model/check.sh -DNO_MAY_SEND       no may_send check: must find a late call
# The verifier is generated and compiled in a temporary directory, and searches every
# reachable state (assertions: pan -DSAFETY). On an error, that directory is kept and
# named, holding the trail: replay it there with `spin -t -p <switch> protocol.pml`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/jobtrail-spin.XXXXXX")
cp "$here/protocol.pml" "$work/"
cd "$work"
spin -a "$@" protocol.pml
gcc -w -O1 -DSAFETY -DCOLLAPSE -DMEMLIM=1024 -o pan pan.c
./pan -m500000 | tee pan.out
if [ -e protocol.pml.trail ]; then
  echo "counterexample kept in $work (replay: cd $work && spin -t -p $* protocol.pml)"
else
  rm -rf "$work"
fi
