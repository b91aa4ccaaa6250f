#!/usr/bin/env bash
# Fails when a C++ file of the repository is not formatted as .clang-format says (Google style,
# 100 columns): `clang-format --dry-run -Werror` over every tracked .h and .cpp. `make format`
# fixes them.
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.h' '*.cpp')
else
  mapfile -t files < <(find engine api daemon tests bench -name '*.h' -o -name '*.cpp')
fi
clang-format --dry-run -Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"
