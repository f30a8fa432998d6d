#!/usr/bin/env bash
# images.sh: the container images of the test ground, built without docker or a registry.
#   images.sh build    writes (once, cached by content under $IMAGE_DIR) the docker-archive
#                      tarballs of $PAUSE_IMAGE and $BUSYBOX_IMAGE; prints their paths
#   images.sh import   builds them if needed and imports them into the running cluster's
#                      containerd (namespace k8s.io), skipping images already there
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# content_key: a short hash of everything the images are made from (sources, busybox, Go).
content_key() {
  {
    cat "$GROUND_DIR/images.sh" "$GROUND_DIR"/imagebuild/*.go "$GROUND_DIR"/pause/*.go /bin/busybox
    grep go-containerregistry "$REPO_DIR/go.mod"
    go env GOVERSION GOARCH
  } | sha256sum | cut -c1-16
}

# build_images KEY: writes pause-KEY.tar and busybox-KEY.tar into $IMAGE_DIR.
build_images() {
  local key=$1 work
  work=$(mktemp -d)
  log "building images $PAUSE_IMAGE and $BUSYBOX_IMAGE"
  (cd "$REPO_DIR" &&
    go build -o "$work/imagebuild" ./test/ground/imagebuild &&
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/pause" ./test/ground/pause)
  mkdir -p "$IMAGE_DIR"
  rm -f "$IMAGE_DIR"/pause-*.tar "$IMAGE_DIR"/busybox-*.tar

  "$work/imagebuild" -name "$PAUSE_IMAGE" -o "$IMAGE_DIR/pause-$key.tar" \
    -add "$work/pause:/pause" -entrypoint /pause -user 65535:65535

  # busybox with a symlink per applet, a root and a nobody user, and a sticky /tmp.
  local links=()
  for applet in $(/bin/busybox --list); do
    [[ $applet == busybox ]] || links+=(-symlink "/bin/$applet=busybox")
  done
  "$work/imagebuild" -name "$BUSYBOX_IMAGE" -o "$IMAGE_DIR/busybox-$key.tar" \
    -add /bin/busybox:/bin/busybox "${links[@]}" \
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

import_images() {
  local ctr=(ctr --address "$CONTAINERD_SOCK" --namespace k8s.io) present tar
  present=$("${ctr[@]}" images ls -q)
  for tar in $(ensure_images); do
    local image=$PAUSE_IMAGE
    [[ $(basename "$tar") == busybox-* ]] && image=$BUSYBOX_IMAGE
    if grep -qxF "$image" <<<"$present"; then
      continue
    fi
    "${ctr[@]}" images import "$tar" >/dev/null
    present=$("${ctr[@]}" images ls -q) # (no `ctr | grep -q`: with pipefail, SIGPIPE fails it)
    grep -qxF "$image" <<<"$present" || die "importing $tar did not create $image"
  done
}

case ${1:-} in
  build) ensure_images | tr ' ' '\n' ;;
  import) import_images ;;
  *) die "usage: images.sh build|import" ;;
esac
