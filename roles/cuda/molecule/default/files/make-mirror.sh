#!/usr/bin/env bash
# Rebuild the small signed apt repository the `mirror` scenario installs from (the files next to
# this script are its output, kept in git: the scenario needs no gpg). It mimics NVIDIA's
# repository layout and label (`Label: NVIDIA CUDA`) with empty packages: two versions of the
# toolkit of the pinned series and two driver branches, so that the pins decide.
# Usage: bash make-mirror.sh   (needs dpkg-deb, dpkg-scanpackages, gpg)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$HERE/repo/debian12/x86_64
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
rm -rf "$HERE/repo"
mkdir -p "$REPO"

package() {  # name version
    local dir=$WORK/$1_$2
    mkdir -p "$dir/DEBIAN"
    printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: tfdist tests <tfdist-test@invalid>\nDescription: empty stand-in for %s\n' \
        "$1" "$2" "$1" >"$dir/DEBIAN/control"
    dpkg-deb --root-owner-group --build -Zgzip "$dir" "$REPO/$1_$2_all.deb" >/dev/null
}
package cuda-toolkit-12-5 12.5.1-1
package cuda-toolkit-12-5 12.5.2-1
package cuda-drivers 570.172.08-1
package cuda-drivers 575.57.08-1

cd "$REPO"
dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null
gzip -9nk Packages
{
    printf 'Origin: NVIDIA\nLabel: NVIDIA CUDA\nArchitectures: all amd64\nDate: %s\nSHA256:\n' "$(date -Ru)"
    for f in Packages Packages.gz; do printf ' %s %s %s\n' "$(sha256sum $f | cut -d' ' -f1)" "$(stat -c%s $f)" "$f"; done
} >Release

export GNUPGHOME=$WORK/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
    --quick-gen-key "tfdist molecule mirror key <tfdist-test@invalid>" ed25519 sign never
gpg --batch --quiet --clearsign -o InRelease Release
rm Release
gpg --armor --export >"$HERE/mirror-key.asc"
