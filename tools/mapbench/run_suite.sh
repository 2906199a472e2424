#!/usr/bin/env bash
# Full suite; every line is a separate process. Output: results.log
set -u
B=./target/release/mapbench
MAPS="papaya_blk papaya_ti scc_map scc_index dashmap std_mutex pl_mutex"
cargo build --release -q
{
echo "# start $(date -Is)"
for m in $MAPS; do for n in 1000000 10000000; do $B tput $m u64 $n 1,2,4 10000000 3; done; done
$B tput papaya u64 1000000 1,2,4 1000000 1     # default papaya: reduced ops (pathological, see report)
for m in $MAPS; do $B tput $m u128 10000000 1,2,4 10000000 3; done
for m in $MAPS; do for t in 1 2; do $B cold $m u64 10000000 $t; done; $B cold $m u64 1000000 1; $B cold $m u128 10000000 1; done
$B cold papaya u64 1000000 1
for m in $MAPS; do timeout 300 $B mixed $m u64 10000000 2 10000000 || echo "RESULT mixed map=$m EXIT=$?"; done
echo "# end $(date -Is)"
} 2>&1 | tee results.log
