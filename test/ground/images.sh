#!/usr/bin/env bash
# images.sh: the container images of the test ground, built without docker or a registry.
#   images.sh build    writes (once, cached by content under $IMAGE_DIR) the docker-archive
#                      tarballs of $PAUSE_IMAGE and $BUSYBOX_IMAGE; prints their paths
#   images.sh import   builds them if needed and imports them into the running cluster's
#                      containerd (namespace k8s.io), skipping images already there; the
#                      busybox image also gets the names in $BUSYBOX_ALIASES (busybox:1.36)
#   images.sh operator BINARY
#                      builds $OPERATOR_IMAGE from a static binary (the calaf CLI: entrypoint
#                      /calaf, arguments "operator", user 65532, a writable /tmp; with
#                      calaf-runner from BINARY's directory as /calaf-runner), cached by
#                      the binary's hash, and imports it into the running cluster, replacing
#                      an older image of that name; prints the tarball's path
set -euo pipefail
source "$(dirname "$0")/lib.sh"

ctr=(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io)
IMPORTED=$CALAF_RUN/images.imported # "IMAGE TARBALL" lines: what this cluster imported

# content_key: a short hash of everything the images are made from (sources, busybox, Go).
content_key() {
  [[ -x $BUSYBOX_BIN ]] || die "$BUSYBOX_BIN is missing (Debian package busybox-static; test/ground/deps.sh installs it)"
  {
    cat "$GROUND_DIR/images.sh" "$GROUND_DIR"/imagebuild/*.go "$GROUND_DIR"/pause/*.go "$BUSYBOX_BIN"
    grep go-containerregistry "$REPO_DIR/go.mod"
    go env GOVERSION GOARCH
  } | sha256sum | cut -c1-16
}

# build_images KEY: writes pause-KEY.tar and busybox-KEY.tar into $IMAGE_DIR.
build_images() {
  local key=$1 work
  work=$(mktemp -d)
  log "building images $PAUSE_IMAGE and $BUSYBOX_IMAGE"
  build_imagebuild "$work"
  (cd "$REPO_DIR" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/pause" ./test/ground/pause)
  mkdir -p "$IMAGE_DIR"
  rm -f "$IMAGE_DIR"/pause-*.tar "$IMAGE_DIR"/busybox-*.tar

  "$work/imagebuild" -name "$PAUSE_IMAGE" -o "$IMAGE_DIR/pause-$key.tar" \
    -add "$work/pause:/pause" -entrypoint /pause -user 65535:65535

  # busybox with a symlink per applet, a root and a nobody user, and a sticky /tmp.
  local links=()
  for applet in $("$BUSYBOX_BIN" --list); do
    [[ $applet == busybox ]] || links+=(-symlink "/bin/$applet=busybox")
  done
  "$work/imagebuild" -name "$BUSYBOX_IMAGE" -o "$IMAGE_DIR/busybox-$key.tar" \
    -add "$BUSYBOX_BIN:/bin/busybox" "${links[@]}" \
    -dir /tmp:1777 -dir /root:700 -dir /home \
    -file $'/etc/passwd=root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' \
    -file $'/etc/group=root:x:0:\nnobody:x:65534:\n' \
    -cmd /bin/sh
  rm -rf "$work"
}

# ensure_images: prints the two tarballs' paths, building them first when the key changed.
ensure_images() {
  local key
  key=$(content_key)
  [[ -f $IMAGE_DIR/pause-$key.tar && -f $IMAGE_DIR/busybox-$key.tar ]] || build_images "$key" >&2
  echo "$IMAGE_DIR/pause-$key.tar" "$IMAGE_DIR/busybox-$key.tar"
}

# build_imagebuild DIR: builds the imagebuild tool into DIR.
build_imagebuild() {
  (cd "$REPO_DIR" && go build -o "$1/imagebuild" ./test/ground/imagebuild)
}

# require_cluster: the running cluster's containerd answers.
require_cluster() {
  if ! pid_alive containerd || ! "${ctr[@]}" version >/dev/null 2>&1; then
    die "no cluster is up (containerd at $CONTAINERD_SOCK); start one with make cluster-up"
  fi
}

# target_of NAME: the digest NAME points to in the cluster's containerd, or nothing.
target_of() {
  "${ctr[@]}" images ls | awk -v name="$1" '$1 == name {print $3}'
}

# refs_to DIGEST: the names pointing to DIGEST.
refs_to() {
  "${ctr[@]}" images ls | awk -v digest="$1" 'NR > 1 && $3 == digest {print $1}'
}

# import_tar IMAGE TAR: imports TAR, which holds IMAGE, into the cluster's containerd unless
# this very tarball was imported already and IMAGE is there; an older image of the same name
# is replaced: containerd re-points the name, and the references the CRI plugin keeps by
# image ID ("sha256:...") to the old image are removed when no other name uses it, so that
# its content can be garbage-collected (containers still running it keep their snapshots).
import_tar() {
  local image=$1 tar=$2 present old new refs ref
  present=$("${ctr[@]}" images ls -q) # (no `ctr | grep -q`: with pipefail, SIGPIPE fails it)
  if grep -qxF "$image" <<<"$present" && grep -qxF "$image $tar" "$IMPORTED" 2>/dev/null; then
    return 0
  fi
  log "importing $image"
  old=$(target_of "$image")
  "${ctr[@]}" images import "$tar" >/dev/null
  present=$("${ctr[@]}" images ls -q)
  grep -qxF "$image" <<<"$present" || die "importing $tar did not create $image"
  new=$(target_of "$image")
  if [[ -n $old && $old != "$new" ]]; then
    refs=$(refs_to "$old")
    if [[ -n $refs ]] && ! grep -qv '^sha256:' <<<"$refs"; then
      for ref in $refs; do "${ctr[@]}" images rm "$ref" >/dev/null; done
    fi
  fi
  { grep -vF "$image " "$IMPORTED" 2>/dev/null || true; echo "$image $tar"; } >"$IMPORTED.new"
  mv "$IMPORTED.new" "$IMPORTED"
}


import_images() {
  local tar image alias want
  require_cluster
  for tar in $(ensure_images); do
    image=$PAUSE_IMAGE
    [[ $(basename "$tar") == busybox-* ]] && image=$BUSYBOX_IMAGE
    import_tar "$image" "$tar"
  done
  want=$(target_of "$BUSYBOX_IMAGE")
  for alias in "${BUSYBOX_ALIASES[@]}"; do
    [[ $(target_of "$alias") == "$want" ]] || "${ctr[@]}" images tag --force "$BUSYBOX_IMAGE" "$alias" >/dev/null
  done
}

# operator_image BINARY: builds $OPERATOR_IMAGE from BINARY (cached by the hash of the
# binary and of how the image is made) and imports it into the running cluster.
operator_image() {
  local binary=$1 key tar work deps runner extra=()
  [[ -f $binary ]] || die "no such file: $binary"
  deps=$(ldd "$binary" 2>&1 || true)
  [[ $deps != *"=>"* ]] || die "$binary is linked dynamically; build it with CGO_ENABLED=0"
  # calaf-runner next to the binary (make build) goes next to /calaf, where the operator
  # finds it to run operations in pods (docs/orchestration.md).
  runner=$(dirname "$binary")/calaf-runner
  [[ -f $runner ]] && extra=(-add "$runner:/calaf-runner")
  require_cluster
  key=$({
    sha256sum <"$binary"
    [[ -f $runner ]] && sha256sum <"$runner"
    cat "$GROUND_DIR/images.sh" "$GROUND_DIR"/imagebuild/*.go
    grep go-containerregistry "$REPO_DIR/go.mod"
    go env GOVERSION GOARCH
  } | sha256sum | cut -c1-16)
  tar=$IMAGE_DIR/calaf-$key.tar
  if [[ ! -f $tar ]]; then
    log "building image $OPERATOR_IMAGE from $binary"
    work=$(mktemp -d)
    build_imagebuild "$work"
    mkdir -p "$IMAGE_DIR"
    rm -f "$IMAGE_DIR"/calaf-*.tar
    "$work/imagebuild" -name "$OPERATOR_IMAGE" -o "$tar" \
      -add "$binary:/calaf" "${extra[@]}" -entrypoint /calaf -cmd operator -user 65532:65532 -dir /tmp:1777 \
      -file $'/etc/passwd=root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' \
      -file $'/etc/group=root:x:0:\nnonroot:x:65532:\n' >/dev/null
    rm -rf "$work"
  fi
  import_tar "$OPERATOR_IMAGE" "$tar"
  echo "$tar"
}

case ${1:-} in
  build) ensure_images | tr ' ' '\n' ;;
  import) import_images ;;
  operator) (($# == 2)) || die "usage: images.sh operator BINARY"; operator_image "$2" ;;
  *) die "usage: images.sh build|import|operator BINARY" ;;
esac
