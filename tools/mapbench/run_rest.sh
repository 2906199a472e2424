#!/usr/bin/env bash
# Reduced remainder of the suite (machine heavily shared). Output: results_part2.log
set -u
B=./target/release/mapbench
MAPS="papaya_blk papaya_ti scc_map scc_index dashmap std_mutex pl_mutex"
{
echo "# start $(date -Is)"
for m in $MAPS; do for t in 1 2; do $B cold $m u64 10000000 $t; done; $B cold $m u64 1000000 1; $B cold $m u128 10000000 1; done
$B cold papaya u64 1000000 1
for m in $MAPS; do timeout 300 $B mixed $m u64 10000000 2 10000000 || echo "RESULT mixed map=$m EXIT=$?"; done
for m in scc_map scc_index dashmap pl_mutex; do $B tput $m u128 10000000 1,2 10000000 1; done
echo "# end $(date -Is)"
} 2>&1 | tee results_part2.log
