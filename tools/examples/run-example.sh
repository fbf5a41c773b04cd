#!/usr/bin/env bash
# Example: install the three example tools and run csv-stats on the sample CSV; user-facing script, trusted side.
# Uses the default tycli home (TYCLI_HOME if set, else the per-user data folder). Run from anywhere after `npm run build`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tycli() { node "$root/bin/tycli.mjs" "$@"; }

csv_rev="$(tycli tool add "$root/tools/csv-stats/manifest.json")"
tycli tool add "$root/tools/json-reshape/manifest.json" >/dev/null
tycli tool add "$root/tools/text-stats/manifest.json" >/dev/null

# Pinned to the revision just added, so an older csv-stats active in this home cannot answer instead.
# The CSV file is read here by tycli and passed as the "csv" argument; the sandbox gets no file access.
tycli run "csv-stats@$csv_rev" --arg-file "csv=$here/data/sales.csv" --args "@$here/args-csv-stats.json"
