# Shared by the packaging scripts (source it; not a command).

# source_date_epoch ROOT: the time every built file is stamped with, so that two builds
# of one commit are byte-identical: SOURCE_DATE_EPOCH if set, else the last commit's time,
# else the newest file's time (a checkout without git).
source_date_epoch() {
  local root="$1"
  if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then echo "$SOURCE_DATE_EPOCH"; return; fi
  if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then git -C "$root" log -1 --format=%ct; return; fi
  find "$root/pyproject.toml" "$root/dpdesk" "$root/resources" -type f -printf '%T@\n' | sort -n | tail -1 | cut -d. -f1
}

# build_dpdesk_wheel ROOT OUTDIR [PYTHON]: build dpdesk's wheel from a clean copy of the
# checkout (only what the package needs), so stale build/ or egg-info folders in the
# checkout never end up in it. Reproducible: the wheel's entries carry the time of
# source_date_epoch and the files' modes are made independent of the umask.
build_dpdesk_wheel() {
  local root="$1" outdir="$2" python="${3:-python3}" src epoch
  local parts=(pyproject.toml dpdesk resources) part
  for part in README.md LICENSE; do [ -e "$root/$part" ] && parts+=("$part"); done
  epoch="$(source_date_epoch "$root")"
  src="$(mktemp -d "${TMPDIR:-/tmp}/dpdesk-src.XXXXXX")"
  tar -C "$root" --exclude='__pycache__' --exclude='*.pyc' --exclude='*.egg-info' \
    -cf - "${parts[@]}" | tar -C "$src" -xf -
  chmod -R u=rwX,go=rX "$src"
  (umask 022; SOURCE_DATE_EPOCH="$epoch" "$python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --wheel-dir "$outdir" "$src")
  rm -rf "$src"
}

# write_sha256sums DIR: DIR/SHA256SUMS over every file under DIR (paths relative to DIR,
# sorted), so that `sha256sum -c SHA256SUMS` run inside DIR checks all of it. The sums file
# and its signature at the top are the only files left out (a wheelhouse's own sums are in).
write_sha256sums() {
  local dir="$1" sums
  sums="$(mktemp)"
  (cd "$dir" && find . -type f ! -path ./SHA256SUMS ! -path ./SHA256SUMS.sig -printf '%P\0' | LC_ALL=C sort -z |
     xargs -0 -r sha256sum) > "$sums"
  mv "$sums" "$dir/SHA256SUMS"
  chmod 644 "$dir/SHA256SUMS"
}

# --- chroots (build-bundle.sh builds in Debian 11; check-platforms.sh runs in Debian 11, 12, 13, Ubuntu 22.04) ---

# The cache for chroots and Python builds: outside the repository, reused across runs.
DPDESK_CACHE="${DPDESK_CACHE:-/work/cache}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
UBUNTU_MIRROR="${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}"
# Ubuntu's archive key (2018), the fingerprint Ubuntu publishes: the anchor for the keyring
# fetched from Ubuntu's archive, since this Debian machine has no Ubuntu keyring of its own
UBUNTU_ARCHIVE_KEY=F6ECB3762474EDA9D21B7022871920D1991BC93C
UBUNTU_KEYRING_DEB=pool/main/u/ubuntu-keyring/ubuntu-keyring_2021.03.26_all.deb

# ubuntu_keyring: the path of Ubuntu's archive keyring, fetched once into the cache and
# refused unless it holds the key UBUNTU_ARCHIVE_KEY (debootstrap then checks every package
# against it).
ubuntu_keyring() {
  local folder="$DPDESK_CACHE/keyrings" keyring="$DPDESK_CACHE/keyrings/ubuntu-archive-keyring.gpg"
  if [ ! -f "$keyring" ]; then
    mkdir -p "$folder"
    local scratch; scratch="$(mktemp -d)"
    curl -fsS -o "$scratch/keyring.deb" "$UBUNTU_MIRROR/$UBUNTU_KEYRING_DEB" &&
      dpkg-deb -x "$scratch/keyring.deb" "$scratch/x" &&
      cp "$scratch/x/usr/share/keyrings/ubuntu-archive-keyring.gpg" "$keyring.tmp" || { rm -rf "$scratch"; return 1; }
    rm -rf "$scratch"
    if ! gpg --show-keys --with-colons "$keyring.tmp" 2>/dev/null | grep -q "^fpr:*$UBUNTU_ARCHIVE_KEY:"; then
      rm -f "$keyring.tmp"; echo "ubuntu_keyring: the fetched keyring lacks Ubuntu's archive key $UBUNTU_ARCHIVE_KEY" >&2; return 1
    fi
    mv "$keyring.tmp" "$keyring"
  fi
  echo "$keyring"
}

# system_name SUITE: the system a suite name is, in words.
system_name() {
  case "$1" in bullseye) echo "Debian 11" ;; bookworm) echo "Debian 12" ;; trixie) echo "Debian 13" ;;
               jammy) echo "Ubuntu 22.04" ;; *) echo "$1" ;; esac
}

# make_chroot SUITE NAME [PACKAGE...]: a cached chroot $DPDESK_CACHE/chroots/NAME, made with
# debootstrap (minbase) from the Debian archive (bullseye, bookworm, trixie) or Ubuntu's
# (jammy), with the security updates and PACKAGEs installed. Made once; printed path on
# stdout. Needs root and the network.
make_chroot() {
  local suite="$1" name="$2"; shift 2
  local root="$DPDESK_CACHE/chroots/$name" base="$DPDESK_CACHE/chroots/$suite-minbase"
  local wanted="$*" mirror="$DEBIAN_MIRROR" keyring=() sources
  if [ -f "$root/.dpdesk-ready" ] && [ "$(cat "$root/.dpdesk-ready")" = "$wanted" ]; then echo "$root"; return 0; fi
  command -v debootstrap >/dev/null 2>&1 || { echo "make_chroot: needs debootstrap (apt-get install debootstrap)" >&2; return 1; }
  if [ "$suite" = jammy ]; then
    mirror="$UBUNTU_MIRROR"
    local ubuntu_keys; ubuntu_keys="$(ubuntu_keyring)" || return 1
    keyring=("--keyring=$ubuntu_keys")
    sources="$(printf 'deb %s %s main universe\n' "$mirror" "$suite" "$mirror" "$suite-updates" "$mirror" "$suite-security")"
  else
    local security="${DEBIAN_MIRROR%/debian}/debian-security"
    sources="$(printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
      "$mirror" "$suite" "$mirror" "$suite" "$security" "$suite")"
  fi
  mkdir -p "$DPDESK_CACHE/chroots"
  if [ ! -d "$base" ]; then
    echo "debootstrap $suite (minbase) into $base" >&2
    rm -rf "$base.tmp"
    debootstrap --variant=minbase "${keyring[@]}" "$suite" "$base.tmp" "$mirror" >&2
    mv "$base.tmp" "$base"
  fi
  if [ ! -f "$root/.dpdesk-ready" ]; then   # a new chroot; one made before only gets the new packages
    rm -rf "$root"
    cp -a "$base" "$root"
  fi
  printf '%s\n' "$sources" > "$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  in_chroot "$root" --net sh -c "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
    apt-get upgrade -y -qq >/dev/null && { [ \$# -eq 0 ] || apt-get install -y -qq --no-install-recommends \"\$@\" >/dev/null; } &&
    apt-get clean" sh "$@" >&2
  echo "$wanted" > "$root/.dpdesk-ready"
  echo "$root"
}

# in_chroot ROOT [--net] COMMAND...: run COMMAND in the chroot ROOT, in private mount and
# PID namespaces (/proc, /dev mounted there vanish with it) and, without --net, in a network
# namespace with no network (loopback only). The environment is cleared; pass variables
# with `env NAME=VALUE COMMAND`. Optional, from the environment:
#   DPDESK_CHROOT_BIND=DIR   DIR is /mnt/host inside
#   DPDESK_CHROOT_UPPER=DIR  ROOT stays untouched: changes go to an overlay in DIR
#   DPDESK_CHROOT_X11=1      this machine's X11 sockets (/tmp/.X11-unix) are visible inside
in_chroot() {
  local root="$1" net=(--net); shift
  if [ "${1:-}" = --net ]; then net=(); shift; fi
  unshare --mount --pid --fork "${net[@]}" sh -c '
    root="$1"; shift
    mount --make-rprivate / 2>/dev/null || true
    if [ -n "${DPDESK_CHROOT_UPPER:-}" ]; then
      mkdir -p "$DPDESK_CHROOT_UPPER/upper" "$DPDESK_CHROOT_UPPER/work" "$DPDESK_CHROOT_UPPER/merged"
      mount -t overlay overlay -o "lowerdir=$root,upperdir=$DPDESK_CHROOT_UPPER/upper,workdir=$DPDESK_CHROOT_UPPER/work" \
        "$DPDESK_CHROOT_UPPER/merged" || exit 1
      root="$DPDESK_CHROOT_UPPER/merged"
    fi
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/dev/shm"
    if [ -n "${DPDESK_CHROOT_BIND:-}" ]; then mkdir -p "$root/mnt/host"; mount --bind "$DPDESK_CHROOT_BIND" "$root/mnt/host"; fi
    if [ -n "${DPDESK_CHROOT_X11:-}" ]; then mkdir -p "$root/tmp/.X11-unix"; mount --bind /tmp/.X11-unix "$root/tmp/.X11-unix"; fi
    ip link set lo up 2>/dev/null || true
    exec chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 "$@"' sh "$root" "$@"
}
