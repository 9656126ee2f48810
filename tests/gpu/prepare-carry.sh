#!/usr/bin/env bash
# prepare-carry.sh: fills .devcarry/ (ignored by git) with what
# tests/gpu/run-checks.sh needs on a bare GPU machine that has the CUDA
# toolkit but maybe not this project's build dependencies, and cannot reach
# any network. Run it here, on the Debian bookworm machine of the project;
# then carry .devcarry with the device call (see README.md).
#
#   tests/gpu/prepare-carry.sh [MODEL_DIR]
#
# What goes in (about 50 MiB; the device call carries 64 MiB in all, the
# working tree included):
#   sysroot.tar.xz   headers, pkg-config files and shared libraries of the
#                    build dependencies (GLib, json-glib, FFTW, OpenBLAS,
#                    libsndfile, libsamplerate, GStreamer and what their .pc
#                    files require), plus pkgconf, meson and ninja; from
#                    Debian packages (apt-get download), docs and static
#                    libraries removed
#   tiny.en.pack     the model (MODEL_DIR, default the installed tiny.en),
#                    packed by model-pack.py: its weight matrices as int8
#                    per row, rebuilt as fp16 there (75.5 MB does not fit)
#   jfk.wav          the shared test speech
#   MANIFEST         packages and sizes
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
carry="$root/.devcarry"
model="${1:-${XDG_DATA_HOME:-$HOME/.local/share}/gst-whisper/models/tiny.en}"
shared="${WHISPER_SHARED_DATA:-$root/../shared/data}"

# Build dependencies (headers, .pc) and every package their .pc files name
# in Requires / Requires.private (pkg-config needs those to answer --cflags).
DEV_PACKAGES=(
  libglib2.0-dev libpcre2-dev libffi-dev zlib1g-dev libmount-dev libblkid-dev
  libselinux1-dev libsepol-dev
  libjson-glib-dev
  libfftw3-dev
  libopenblas-dev libopenblas-pthread-dev
  libsndfile1-dev libflac-dev libogg-dev libvorbis-dev libopus-dev libmpg123-dev
  libsamplerate0-dev
  libgstreamer1.0-dev libunwind-dev libdw-dev libelf-dev liblzma-dev
  libgstreamer-plugins-base1.0-dev liborc-0.4-dev
)
# Shared libraries the build links and the tests load.
RUNTIME_PACKAGES=(
  libglib2.0-0 libpcre2-8-0 libffi8 zlib1g libmount1 libblkid1 libselinux1 libsepol2
  libjson-glib-1.0-0 libfftw3-single3 libopenblas0-pthread libgfortran5 libquadmath0
  libsndfile1 libflac12 libogg0 libvorbis0a libvorbisenc2 libopus0 libmpg123-0 libmp3lame0
  libsamplerate0 libgstreamer1.0-0 libgstreamer-plugins-base1.0-0 libunwind8 libdw1 libelf1
  liblzma5 libbz2-1.0 libzstd1 liborc-0.4-0 libcap2
)
TOOL_PACKAGES=(pkgconf pkgconf-bin libpkgconf3 meson ninja-build)

[ -f "$model/model.bin" ] || { echo "prepare-carry: no model in $model (tools/fetch-model.sh)" >&2; exit 1; }
[ -f "$shared/jfk.wav" ] || { echo "prepare-carry: no $shared/jfk.wav" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "prepare-carry: needs apt-get (Debian)" >&2; exit 1; }

mkdir -p "$carry"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/root"

echo "prepare-carry: downloading $(( ${#DEV_PACKAGES[@]} + ${#RUNTIME_PACKAGES[@]} + ${#TOOL_PACKAGES[@]} )) Debian packages"
(cd "$work/debs" && apt-get download -q "${DEV_PACKAGES[@]}" "${RUNTIME_PACKAGES[@]}" \
  "${TOOL_PACKAGES[@]}" >/dev/null)
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
done

# Trim: documentation, translations, static libraries, tools nobody runs.
r="$work/root"
rm -rf "$r"/usr/share/{doc,man,info,locale,lintian,bug,gtk-doc,gdb,gettext,aclocal,bash-completion,gir-1.0,glib-2.0,vim,zsh,emacs,polkit-1,installed-tests}
rm -rf "$r"/usr/lib/x86_64-linux-gnu/{cmake,girepository-1.0,gio,glib-2.0/gdbus*} "$r"/usr/libexec "$r"/etc
find "$r" -name '*.a' -delete
rm -f "$r"/usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack.so*
find "$r"/usr/bin -mindepth 1 -maxdepth 1 ! -name pkgconf ! -name pkg-config ! -name ninja \
  ! -name meson -exec rm -rf {} +
# OpenBLAS is installed through alternatives (dpkg -x does not run them).
lib="$r/usr/lib/x86_64-linux-gnu"
ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
mkdir -p "$lib/pkgconfig"
ln -sf ../openblas-pthread/pkgconfig/openblas.pc "$lib/pkgconfig/openblas.pc"
# Absolute links (libz.so -> /lib/...) made relative inside the tree; then
# drop links that point nowhere (the FFTW double/long/quad libraries, ...).
while IFS= read -r link; do
  target=$(readlink "$link")
  if [ -e "$r$target" ]; then
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$r$target")" "$link"
  else
    rm -f "$link"
  fi
done < <(find "$r" -type l -lname '/*')
find "$r" -xtype l -delete

{
  echo "gst-whisper device carry, made $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release; echo "$PRETTY_NAME")"
  echo "packages:"
  for deb in "$work"/debs/*.deb; do basename "$deb" .deb; done | sed 's/^/  /'
} >"$carry/MANIFEST"

echo "prepare-carry: packing the sysroot"
tar -C "$work/root" -cf - . | xz -T2 -9 >"$carry/sysroot.tar.xz"

if [ ! -f "$carry/tiny.en.pack" ] || [ "$model/model.bin" -nt "$carry/tiny.en.pack" ]; then
  echo "prepare-carry: packing the model (about a minute)"
  python3 "$here/model-pack.py" pack "$model" "$carry/tiny.en.pack"
fi
cp -f "$shared/jfk.wav" "$carry/jfk.wav"

{
  echo "files:"
  (cd "$carry" && du -b sysroot.tar.xz tiny.en.pack jfk.wav) | sed 's/^/  /'
} >>"$carry/MANIFEST"
total=$(du -sb "$carry" | cut -f1)
tree=$(cd "$root" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "prepare-carry: .devcarry is $((total / 1048576)) MiB; the working tree $((tree / 1048576)) MiB (limit 64 MiB together)"
if [ $((total + tree)) -gt $((63 * 1048576)) ]; then
  echo "prepare-carry: WARNING: more than the device call carries" >&2
  exit 1
fi
