#!/usr/bin/env bash
# comment_density.sh — comment lines per code line for each folder of src/ (issue 19: src/tensor and src/nn against
# the rest of the core). A line counts as comment when it holds a comment and no code (inside /* */ or starting //);
# a line with code counts as code even with a trailing comment. Blank lines count as neither.
#   tools/comment_density.sh [DIR...]   default: every folder under src/
set -u
dirs=("$@")
[ ${#dirs[@]} -eq 0 ] && dirs=($(cd "$(dirname "$0")/.." && ls -d src/*/))
cd "$(dirname "$0")/.."
printf "%-16s %7s %7s %7s\n" folder code comment ratio
for d in "${dirs[@]}"; do
  cat "$d"/*.c "$d"/*.h 2>/dev/null | awk -v name="${d%/}" '
    { line = $0; code = 0; com = 0
      while (length(line) > 0) {
        if (inc) { e = index(line, "*/"); com = 1; if (!e) { line = ""; break } inc = 0; line = substr(line, e + 2); continue }
        sub(/^[ \t]+/, "", line); if (line == "") break
        if (substr(line, 1, 2) == "//") { com = 1; break }
        if (substr(line, 1, 2) == "/*") { inc = 1; line = substr(line, 3); continue }
        code = 1; s = index(line, "/*"); if (!s) break; line = substr(line, s)
      }
      if (code) nc++; else if (com) ncom++ }
    END { printf "%-16s %7d %7d %7.2f\n", name, nc, ncom, nc ? ncom / nc : 0 }'
done
