# Shared by the packaging scripts (source it; not a command).

# build_dpdesk_wheel ROOT OUTDIR [PYTHON]: build dpdesk's wheel from a clean copy of the
# checkout (only what the package needs), so stale build/ or egg-info folders in the
# checkout never end up in it.
build_dpdesk_wheel() {
  local root="$1" outdir="$2" python="${3:-python3}" src
  local parts=(pyproject.toml dpdesk resources) part
  for part in README.md LICENSE; do [ -e "$root/$part" ] && parts+=("$part"); done
  src="$(mktemp -d "${TMPDIR:-/tmp}/dpdesk-src.XXXXXX")"
  tar -C "$root" --exclude='__pycache__' --exclude='*.pyc' --exclude='*.egg-info' \
    -cf - "${parts[@]}" | tar -C "$src" -xf -
  "$python" -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir "$outdir" "$src"
  rm -rf "$src"
}
