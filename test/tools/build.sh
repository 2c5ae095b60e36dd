#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that the test harness (test/cluster)
# runs, from the pinned versions in test/tools/go.mod, into a cache directory:
#
#   ${CCMTEST_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polyccm-tools}/
#       kube-apiserver-<k8s.io/kubernetes version>
#       etcd-<go.etcd.io/etcd/server/v3 version>
#
# Binaries that already exist are skipped, so reruns take seconds. Each binary
# is built to a temporary name and renamed into place, so an interrupted build
# never leaves a half-written file behind.
#
# The versions live in one place only: the require block of test/tools/go.mod
# (test/cluster reads the same file to find the binaries).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
gomod="${here}/go.mod"

# modversion MODULE prints MODULE's required version from go.mod.
modversion() {
	local v
	v="$(awk -v m="$1" '
		$1 == "require" && $2 == m { print $3; exit }
		$1 == m && $2 ~ /^v[0-9]/ { print $2; exit }
	' "${gomod}")"
	if [[ -z "${v}" ]]; then
		echo "build.sh: cannot find the version of $1 in ${gomod}" >&2
		exit 1
	fi
	printf '%s\n' "${v}"
}

kube_version="$(modversion k8s.io/kubernetes)"
etcd_version="$(modversion go.etcd.io/etcd/server/v3)"

out_dir="${CCMTEST_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polyccm-tools}"
mkdir -p "${out_dir}"

# Stamp kube-apiserver with its release version (as the Kubernetes release
# build does), so /version reports v1.x.y rather than v0.0.0-master.
kube_minor="${kube_version#v1.}"
kube_minor="${kube_minor%%.*}"
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X ${pkg}.gitVersion=${kube_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${kube_minor} -X ${pkg}.gitTreeState=clean"
done

# build NAME VERSION PACKAGE ESTIMATE WANT_VERSION_LINE [GO BUILD FLAGS...]
# An existing binary is kept only if its --version output contains
# WANT_VERSION_LINE, so a binary built from other sources is replaced.
build() {
	local name="$1" version="$2" pkg="$3" estimate="$4" want="$5"
	shift 5
	local dest="${out_dir}/${name}-${version}"
	if [[ -x "${dest}" ]]; then
		if "${dest}" --version 2>/dev/null | grep -qF -- "${want}"; then
			echo "${name} ${version}: already built"
			return 0
		fi
		echo "${dest} does not report \"${want}\" in its --version output; rebuilding"
	fi
	echo "building ${name} ${version} (${estimate}; a progress line every ${interval}s)..."
	# tmp is global so the EXIT trap, which removes the temporary file if the
	# build fails or is interrupted, sees it wherever the script exits.
	tmp="${dest}.tmp.$$"
	trap 'rm -f "${tmp}"' EXIT
	local start=${SECONDS}
	local total
	total="$(cd "${here}" && CGO_ENABLED=0 go list -deps "${pkg}" | wc -l)"
	# -v names each package as it is compiled (cached ones are not): the
	# count, against every package the binary needs, is the progress.
	(cd "${here}" && CGO_ENABLED=0 go build -v "$@" -o "${tmp}" "${pkg}" 2>&1) | progress "${name}" "${total}" "${start}"
	mv -f "${tmp}" "${dest}"
	trap - EXIT
	echo "built ${name} ${version} in $((SECONDS - start))s"
}

# interval is how often progress reports, in seconds.
interval="${CCMTEST_TOOLS_PROGRESS_SECONDS:-30}"

# progress NAME TOTAL START reads `go build -v` output: package paths as
# they are compiled, "go: downloading" lines, and errors, which pass
# through. Every interval seconds, even while the compiler is silent in a
# big package, it says how far the build is.
progress() {
	local name="$1" total="$2" start="$3" compiled=0 downloaded=0 last=${SECONDS} line rc
	while true; do
		if IFS= read -r -t "${interval}" line; then
			case "${line}" in
			"go: downloading "*) downloaded=$((downloaded + 1)) ;;
			*[[:space:]:]*) printf '%s\n' "${line}" >&2 ;; # an error, or a note from go
			*) compiled=$((compiled + 1)) ;;
			esac
		else
			rc=$?
			((rc > 128)) || break # end of output; a timeout goes on
		fi
		if ((SECONDS - last >= interval)); then
			last=${SECONDS}
			echo "  ${name}: ${compiled} of ${total} packages compiled (${downloaded} modules downloaded), $((SECONDS - start))s"
		fi
	done
}

build kube-apiserver "${kube_version}" k8s.io/kubernetes/cmd/kube-apiserver \
	"8 to 30 minutes on 2 cores, depending on load" "Kubernetes ${kube_version}" -ldflags="${kube_ldflags# }"
build etcd "${etcd_version}" go.etcd.io/etcd/server/v3 \
	"about 1-2 minutes on 2 cores" "etcd Version: ${etcd_version#v}"

echo "kube-apiserver: ${out_dir}/kube-apiserver-${kube_version}"
echo "etcd:           ${out_dir}/etcd-${etcd_version}"
