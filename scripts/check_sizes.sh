#!/usr/bin/env bash
# Sizes a reader can hold in mind (README: the layout): no source file over 800 lines and no function
# over 80 lines in the library and tool folders. Functions are measured by lizard (PyPI, pinned),
# installed into a venv of its own under the build directory the first time. Exits 1 listing every
# file and function over its limit.
#   scripts/check_sizes.sh [FOLDER...]   (default: the folders below)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WICK_BUILD_DIR:-$root/build}"
cd "$root"
folders=("$@")
((${#folders[@]})) || folders=(core nn onnx tokenizers models distributed sdk plugins conformance tools python)
max_lines=800
max_function=80

venv="$build/tools-venv"
if [ ! -x "$venv/bin/lizard" ]; then
  python3 -m venv "$venv" >/dev/null
  "$venv/bin/pip" install -q --disable-pip-version-check lizard==1.24.3
fi

status=0
# Source files git knows (tracked, or new and not ignored): C, C++, CUDA, OpenCL, Python, shell, CMake.
while IFS= read -r f; do
  [ -f "$f" ] || continue
  n=$(wc -l <"$f")
  if ((n > max_lines)); then
    echo "check_sizes: $f has $n lines (at most $max_lines: split it by concept)"
    status=1
  fi
done < <(git ls-files --cached --others --exclude-standard -- "${folders[@]}" |
         grep -E '\.(c|cc|cpp|h|hpp|cu|cuh|cl|py|sh|cmake)$|CMakeLists\.txt$' | grep -v '/golden/data/')

# lizard's -L is a function's length in lines (warnings only for those over it; -C high so that
# complexity alone warns for nothing).
if ! out=$("$venv/bin/lizard" -L "$max_function" -C 10000 -w -x "python/build/*" "${folders[@]}" 2>&1); then
  echo "$out" | sed 's/^/check_sizes: /'
  status=1
fi
if ((status == 0)); then
  echo "check_sizes: every file in ${folders[*]} is at most $max_lines lines, every function at most $max_function"
fi
exit "$status"
