#!/usr/bin/env bash
# Fetch the corpora of bench/correct_code.py: the released Python sources of
# five well-known PyTorch code bases, at exact versions, without installing
# them (and without torch).
#
# Usage:  bash bench/get_corpora.sh [CORPUS_ROOT]      (default: /work/corpus)
#
# For each NAME==VERSION below it
#   1. downloads the wheel, without dependencies, into CORPUS_ROOT/_dl/wheels
#      (`pip download --no-deps --only-binary :all:`; torchvision's wheel is
#      platform-specific, so its platform and Python are pinned too);
#   2. replaces CORPUS_ROOT/NAME with the package's .py files only (no
#      *.dist-info, no shared libraries, no data files), laid out as in
#      site-packages: CORPUS_ROOT/NAME/<import name>/...;
#   3. writes CORPUS_ROOT/NAME/VERSION: the version on line 1, then the wheel's
#      file name and SHA-256.
#
# A CORPUS_ROOT/NAME that is an unpacked sdist (it has PKG-INFO: the layout
# made by the TorchFix section of bench/README.md, package + tests) is moved to
# CORPUS_ROOT/_sdist/NAME instead of being deleted; correct_code.py skips
# folders whose names start with "_".
#
# Wheels rather than sdists: every project here publishes a wheel (torchvision
# publishes no sdist), a wheel holds exactly the package (sdists add tests,
# docs and examples), and pip need not build anything to download it.
# Where /etc/xdg/pip caps torch and torchvision (see the machine notes),
# torchvision 0.29.1 is within the cap.
set -euo pipefail

ROOT="${1:-/work/corpus}"
PIP="${PIP:-python3 -m pip}"

# name  version  import-dir  extra pip download options
SPECS=(
  "accelerate   1.15.0 accelerate   -"
  "lightning    2.6.6  lightning    -"
  "timm         1.0.31 timm         -"
  "torchvision  0.29.1 torchvision  --platform=manylinux_2_28_x86_64 --python-version=3.11 --implementation=cp --abi=cp311"
  "transformers 5.24.0 transformers -"
)

mkdir -p "$ROOT/_dl/wheels"

for spec in "${SPECS[@]}"; do
  read -r name version pkgdir extra <<<"$spec"
  [ "$extra" = "-" ] && extra=""
  echo "== $name $version"
  # shellcheck disable=SC2086  # $extra is a list of options
  $PIP download --quiet --no-deps --only-binary :all: $extra \
      "$name==$version" -d "$ROOT/_dl/wheels"
  wheel=$(ls "$ROOT/_dl/wheels/$name-$version"-*.whl | head -n 1)

  dest="$ROOT/$name"
  if [ -f "$dest/PKG-INFO" ]; then
    mkdir -p "$ROOT/_sdist"
    rm -rf "$ROOT/_sdist/$name"
    echo "   moving the unpacked sdist $dest to $ROOT/_sdist/$name"
    mv "$dest" "$ROOT/_sdist/$name"
  fi
  rm -rf "$dest"
  mkdir -p "$dest"

  python3 - "$wheel" "$dest" "$pkgdir" "$version" <<'PY'
import hashlib, os, sys, zipfile
wheel, dest, pkgdir, version = sys.argv[1:]
count = 0
with zipfile.ZipFile(wheel) as zf:
    for info in zf.infolist():
        parts = info.filename.split("/")
        if parts[0] != pkgdir or not info.filename.endswith(".py") or info.is_dir():
            continue
        if ".." in parts:
            raise SystemExit(f"unsafe path in wheel: {info.filename}")
        zf.extract(info, dest)
        count += 1
with open(wheel, "rb") as fh:
    digest = hashlib.sha256(fh.read()).hexdigest()
with open(os.path.join(dest, "VERSION"), "w") as fh:
    fh.write(f"{version}\nwheel {os.path.basename(wheel)} sha256 {digest}\n")
print(f"   {count} .py files into {dest}/{pkgdir}, sha256 {digest[:16]}...")
PY
done
