# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/build and scripts/test: install missing Debian packages.
#
# ensure_debian_packages PKG... : apt-get update once, then install what is
#   missing (as root, or through sudo). A PKG may name its suite as in
#   `apt-get install PKG/SUITE` (e.g. golang-1.23-go/bookworm-backports).
#   Progress goes to stderr.
# ensure_backports_suite : makes bookworm-backports known to apt (see there).
# debian_package_installed PKG : whether dpkg has PKG installed.

_gotrace_apt_updated=0

debian_package_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# Echoes "sudo" or "" (root); fails with a message when neither can install.
_gotrace_apt_sudo() {
  if [ "$(id -u)" -eq 0 ]; then return 0; fi
  command -v sudo >/dev/null 2>&1 || { echo "gotrace: need root or sudo to install $*" >&2; return 1; }
  echo sudo
}

ensure_debian_packages() {
  local missing=() p sudo
  for p in "$@"; do
    debian_package_installed "${p%%/*}" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "gotrace: missing packages (${missing[*]}) and no apt-get to install them" >&2
    return 1
  fi
  sudo=$(_gotrace_apt_sudo "${missing[*]}") || return 1
  echo "gotrace: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if [ "$_gotrace_apt_updated" -eq 0 ]; then
    _gotrace_apt_updated=1
    # One update for every suite. A suite that cannot be reached (backports
    # behind a mirror that lacks it) makes apt-get update fail although the
    # others were read: whether the packages install is what counts.
    $sudo apt-get update -qq >&2 || echo "gotrace: apt-get update reported errors (above)" >&2
  fi
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Makes the bookworm-backports suite known to apt when it is not: adds
# /etc/apt/sources.list.d/gotrace-backports.sources with the URI and key of
# the machine's own bookworm suite (which may be a mirror or a snapshot), or
# deb.debian.org and Debian's archive key when no such entry is found. Fails
# (without a message) on systems that are not Debian 12 or cannot be changed.
# Does not run apt-get update: ensure_debian_packages does, once.
ensure_backports_suite() {
  local codename="" f uri="" key="" sudo apt=${GOTRACE_APT_ETC:-/etc/apt}  # tests point it elsewhere
  [ -r /etc/os-release ] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ "$codename" = bookworm ] || return 1
  command -v apt-get >/dev/null 2>&1 || return 1
  if grep -Eqs '^[^#]*bookworm-backports' "$apt/sources.list" "$apt"/sources.list.d/*.list \
       "$apt"/sources.list.d/*.sources; then
    return 0
  fi
  # deb822 files: the stanza whose Suites has the word bookworm.
  for f in "$apt"/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    read -r uri key < <(awk '
      function flush() { if (suite && uri != "") { print uri, (key == "" ? "-" : key); found = 1; exit } suite = 0; uri = ""; key = "" }
      /^[ \t]*$/ { flush(); next }
      /^URIs:/ { uri = $2 }
      /^Signed-By:/ { key = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
      END { if (!found) flush() }' "$f") || true
    [ -n "$uri" ] && break
  done
  # One-line format: deb [signed-by=KEY] URI bookworm main
  if [ -z "$uri" ] && [ -r "$apt/sources.list" ]; then
    read -r uri key < <(awk '
      $1 == "deb" {
        k = "-"; i = 2
        if ($2 ~ /^\[/) { for (; i <= NF; i++) { if ($i ~ /signed-by=/) { k = $i; sub(/.*signed-by=/, "", k); sub(/\]$/, "", k) } if ($i ~ /\]$/) { i++; break } } }
        if ($(i + 1) == "bookworm") { print $i, k; exit }
      }' "$apt/sources.list") || true
  fi
  [ -n "$uri" ] || uri=http://deb.debian.org/debian
  { [ -z "$key" ] || [ "$key" = - ]; } && key=/usr/share/keyrings/debian-archive-keyring.gpg
  sudo=$(_gotrace_apt_sudo "the bookworm-backports apt source") || return 1
  echo "gotrace: adding bookworm-backports ($uri) to apt's sources" >&2
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: %s\n' \
    "$uri" "$key" | $sudo tee "$apt/sources.list.d/gotrace-backports.sources" >/dev/null || return 1
  # The list of this suite must be read even if every other package is there.
  _gotrace_apt_updated=0
}
