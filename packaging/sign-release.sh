#!/usr/bin/env bash
# Sign a release folder's SHA256SUMS with the project's release key (OpenSSH's ssh-keygen,
# which every machine with ssh has, so the steward's side needs nothing new):
#
#   DPDESK_SIGNING_KEY=/path/to/dpdesk-release bash packaging/sign-release.sh DIR
#
# writes DIR/SHA256SUMS.sig and checks it at once against the public key published in the
# repository (packaging/dpdesk-release.pub, ALLOWED_SIGNERS overrides it), so a release
# signed with another key never leaves. The private key is never in the repository: keep
# it offline and give its path in DPDESK_SIGNING_KEY.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: DPDESK_SIGNING_KEY=KEY sign-release.sh DIR}"
key="${DPDESK_SIGNING_KEY:-}"
allowed="${ALLOWED_SIGNERS:-$here/dpdesk-release.pub}"
IDENTITY=release@dpdesk
NAMESPACE=dpdesk-release

fail() { echo "sign-release: $*" >&2; exit 1; }
[ -n "$key" ] || fail "set DPDESK_SIGNING_KEY to the path of the release's private key."
[ -f "$key" ] || fail "the signing key $key does not exist."
[ -f "$dir/SHA256SUMS" ] || fail "$dir has no SHA256SUMS to sign."
rm -f "$dir/SHA256SUMS.sig"
ssh-keygen -q -Y sign -f "$key" -n "$NAMESPACE" "$dir/SHA256SUMS" >/dev/null
ssh-keygen -Y verify -f "$allowed" -I "$IDENTITY" -n "$NAMESPACE" -s "$dir/SHA256SUMS.sig" \
  < "$dir/SHA256SUMS" >/dev/null || fail "the signature does not verify with $allowed: wrong key?"
echo "Signed $dir/SHA256SUMS ($(wc -l < "$dir/SHA256SUMS") files) as $IDENTITY: $dir/SHA256SUMS.sig"
