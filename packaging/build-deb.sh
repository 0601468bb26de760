#!/usr/bin/env bash
# packaging/build-deb.sh BINARY OUTDIR - builds OUTDIR/skill-mcp_VERSION_ARCH.deb
# with dpkg-deb alone (no debhelper): the binary, its man page (from
# BINARY --help-man), the systemd unit, /etc/skill-mcp/config.yaml as a
# conffile, /srv/skill-mcp/skills, and the maintainer scripts in
# packaging/debian/. Depends come from dpkg-shlibdeps when it is installed,
# else from the shared libraries' owning packages (dpkg -S). Prints the
# .deb's path last.
set -euo pipefail
# A step that fails says which: set -e alone stops without a word.
trap 'echo "build-deb.sh: line $LINENO: $BASH_COMMAND: exit $?" >&2' ERR
bin=${1:?usage: build-deb.sh BINARY OUTDIR}
out=${2:?usage: build-deb.sh BINARY OUTDIR}
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
version="$(cat "$repo/VERSION")"
arch="$(dpkg --print-architecture)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$(mktemp -d "${TMPDIR:-/tmp}/skill-mcp-deb.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
root="$stage/root"

install -d "$root/usr/bin" "$root/usr/share/man/man1" "$root/lib/systemd/system" \
    "$root/etc/skill-mcp" "$root/srv/skill-mcp/skills" "$root/usr/share/skill-mcp" \
    "$root/usr/share/doc/skill-mcp" "$root/DEBIAN"
install -m 0755 "$bin" "$root/usr/bin/skill-mcp"
strip --strip-unneeded "$root/usr/bin/skill-mcp" 2>/dev/null || true
"$bin" --help-man | gzip -9n >"$root/usr/share/man/man1/skill-mcp.1.gz"
chmod 0644 "$root/usr/share/man/man1/skill-mcp.1.gz"
sed 's#/usr/local/bin/skill-mcp#/usr/bin/skill-mcp#' "$repo/deploy/systemd/skill-mcp.service" \
    >"$root/lib/systemd/system/skill-mcp.service"
install -m 0644 "$repo/deploy/systemd/config.yaml" "$root/etc/skill-mcp/config.yaml"
cp -R "$repo/skills" "$repo/hooks" "$root/usr/share/skill-mcp/"
install -m 0644 "$repo/README.md" "$root/usr/share/doc/skill-mcp/README.md"
chmod -R u+rwX,go+rX,go-w "$root/usr" "$root/lib" "$root/srv"

# Runtime libraries: what the binary links, by package.
depends=""
if command -v dpkg-shlibdeps >/dev/null; then
    mkdir -p "$stage/src/debian"
    printf 'Source: skill-mcp\n\nPackage: skill-mcp\nArchitecture: any\n' >"$stage/src/debian/control"
    depends="$(cd "$stage/src" && dpkg-shlibdeps -O "$root/usr/bin/skill-mcp" 2>/dev/null |
               sed -n 's/^shlibs:Depends=//p')"
fi
if [ -z "$depends" ]; then
    depends="$(ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
                   dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null
               done | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g')"
fi
[ -n "$depends" ] || { echo "build-deb.sh: cannot work out the runtime libraries" >&2; exit 1; }
# Loaded with dlopen when a feature needs them (server/dynlib.c), so neither
# tool above sees them: the sonames the binary names but does not link.
needed="$(objdump -p "$bin" | awk '/NEEDED/{print $2}')"
ldconfig="$(command -v ldconfig || echo /sbin/ldconfig)"    # not on a user's PATH
for so in $(strings -a "$bin" | grep -xE 'lib[A-Za-z0-9_+.-]+\.so\.[0-9]+' | sort -u); do
    grep -qxF "$so" <<<"$needed" && continue
    # awk reads to the end: an early exit would end the writer by SIGPIPE,
    # which pipefail turns into this script's silent exit
    path="$("$ldconfig" -p | awk -v s="$so" '$1 == s && !p {p = $NF} END {print p}')"
    pkg="$(dpkg -S "$(readlink -f "${path:-/nonexistent}")" 2>/dev/null |
           awk -F: 'NR == 1 {print $1}' || true)"
    [ -n "$pkg" ] || { echo "build-deb.sh: no package holds $so (loaded at run time)" >&2; exit 1; }
    grep -qE "(^|, )$pkg( |,|$)" <<<"$depends" || depends="$depends, $pkg"
done

size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat >"$root/DEBIAN/control" <<CONTROL
Package: skill-mcp
Version: $version
Architecture: $arch
Maintainer: skill-mcp maintainers <skill-mcp@localhost>
Installed-Size: $size
Depends: $depends, passwd
Section: net
Priority: optional
Homepage: https://github.com/skill-mcp/skill-mcp
Description: Agent Skills over the Model Context Protocol
 skill-mcp serves a library of skills (folders with SKILL.md, scripts,
 references and hooks) to MCP clients over Streamable HTTP. The service
 reads /etc/skill-mcp/config.yaml and serves /srv/skill-mcp/skills.
CONTROL
printf '/etc/skill-mcp/config.yaml\n' >"$root/DEBIAN/conffiles"
for s in postinst prerm postrm; do
    install -m 0755 "$here/debian/$s" "$root/DEBIAN/$s"
done

deb="$out/skill-mcp_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
