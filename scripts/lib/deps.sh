# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/build and scripts/test: install missing Debian packages.
# ensure_debian_packages PKG... : apt-get update once, then install what is
# missing (as root, or through sudo). Progress goes to stderr.
ensure_debian_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "gotrace: missing packages (${missing[*]}) and no apt-get to install them" >&2
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "gotrace: need root or sudo to install ${missing[*]}" >&2; return 1; }
    sudo=sudo
  fi
  echo "gotrace: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}
