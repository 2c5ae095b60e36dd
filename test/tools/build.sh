#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that the test harness (test/cluster)
# runs, from the pinned versions in test/tools/go.mod, and the helm that the
# chart tests run, from test/tools/helm/go.mod, into a cache directory:
#
#   ${CCMTEST_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polyccm-tools}/
#       kube-apiserver-<k8s.io/kubernetes version>
#       etcd-<go.etcd.io/etcd/server/v3 version>
#       helm-<helm.sh/helm/v3 version>
#       aws-cloud-controller-manager-<k8s.io/cloud-provider-aws version>
#
# Binaries that already exist are skipped, so reruns take seconds. Each binary
# is built to a temporary name and renamed into place, so an interrupted build
# never leaves a half-written file behind.
#
# The versions live in one place only: the require blocks of test/tools/go.mod,
# test/tools/helm/go.mod and test/tools/upstream-aws/go.mod (test/cluster and
# test/upstream read the same files to find the binaries). helm and the
# upstream AWS cloud-controller-manager have modules of their own because
# their Kubernetes libraries are not kube-apiserver's.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
gomod="${here}/go.mod"
helm_dir="${here}/helm"
upstream_aws_dir="${here}/upstream-aws"

# modversion MODULE [GOMOD] prints MODULE's required version from GOMOD
# (default test/tools/go.mod).
modversion() {
	local v file="${2:-${gomod}}"
	v="$(awk -v m="$1" '
		$1 == "require" && $2 == m { print $3; exit }
		$1 == m && $2 ~ /^v[0-9]/ { print $2; exit }
	' "${file}")"
	if [[ -z "${v}" ]]; then
		echo "build.sh: cannot find the version of $1 in ${file}" >&2
		exit 1
	fi
	printf '%s\n' "${v}"
}

kube_version="$(modversion k8s.io/kubernetes)"
etcd_version="$(modversion go.etcd.io/etcd/server/v3)"
helm_version="$(modversion helm.sh/helm/v3 "${helm_dir}/go.mod")"
upstream_aws_version="$(modversion k8s.io/cloud-provider-aws "${upstream_aws_dir}/go.mod")"

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

# Stamp helm as its release build does: its version, and the Kubernetes
# version `helm template` and `helm lint` assume without a cluster (else
# v1.20), from the client-go it is built with (v0.X.Y is Kubernetes v1.X).
client_go_version="$(modversion k8s.io/client-go "${helm_dir}/go.mod")"
client_go_minor="${client_go_version#v0.}"
client_go_minor="${client_go_minor%%.*}"
helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${helm_version}"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	helm_ldflags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${client_go_minor}"
done

# Stamp the upstream AWS cloud-controller-manager as its release build does
# (its Makefile's LDFLAGS), so --version reports the release.
upstream_aws_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${upstream_aws_version} -X main.gitVersion=${upstream_aws_version}"

# build NAME VERSION MODULE_DIR PACKAGE ESTIMATE VERSION_COMMAND WANT_VERSION_LINE
#       [GO BUILD FLAGS...]
# builds PACKAGE of the module in MODULE_DIR. An existing binary is kept
# only if the output of `binary VERSION_COMMAND` contains WANT_VERSION_LINE,
# so a binary built from other sources is replaced.
build() {
	local name="$1" version="$2" dir="$3" pkg="$4" estimate="$5" version_cmd="$6" want="$7"
	shift 7
	local dest="${out_dir}/${name}-${version}"
	if [[ -x "${dest}" ]]; then
		# The output is read whole before grep: `| grep -q` exits at the first
		# match, and a binary printing more lines after it (etcd) then dies of
		# SIGPIPE, which pipefail took for a wrong binary and rebuilt it.
		# version_cmd is split into words on purpose ("version --short").
		local reported
		reported="$("${dest}" ${version_cmd} 2>/dev/null)" || true
		if grep -qF -- "${want}" <<<"${reported}"; then
			echo "${name} ${version}: already built"
			return 0
		fi
		echo "${dest} does not report \"${want}\" in its ${version_cmd} output; rebuilding"
	fi
	echo "building ${name} ${version} (${estimate}; a progress line every ${interval}s)..."
	# tmp is global so the EXIT trap, which removes the temporary file if the
	# build fails or is interrupted, sees it wherever the script exits.
	tmp="${dest}.tmp.$$"
	trap 'rm -f "${tmp}"' EXIT
	local start=${SECONDS}
	local total
	total="$(cd "${dir}" && CGO_ENABLED=0 go list -deps "${pkg}" | wc -l)"
	# -v names each package as it is compiled (cached ones are not): the
	# count, against every package the binary needs, is the progress.
	(cd "${dir}" && CGO_ENABLED=0 go build -v "$@" -o "${tmp}" "${pkg}" 2>&1) | progress "${name}" "${total}" "${start}"
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

build kube-apiserver "${kube_version}" "${here}" k8s.io/kubernetes/cmd/kube-apiserver \
	"8 to 30 minutes on 2 cores, depending on load" --version "Kubernetes ${kube_version}" -ldflags="${kube_ldflags# }"
build etcd "${etcd_version}" "${here}" go.etcd.io/etcd/server/v3 \
	"about 1-2 minutes on 2 cores" --version "etcd Version: ${etcd_version#v}"
# helm is for the chart tests only: `make demo` (NO_HELM=1) leaves it out.
if [[ -z "${NO_HELM:-}" ]]; then
	build helm "${helm_version}" "${helm_dir}" helm.sh/helm/v3/cmd/helm \
		"3 to 10 minutes on 2 cores, depending on load" "version --short" "${helm_version}" -ldflags="${helm_ldflags}"
fi

# The upstream AWS cloud-controller-manager is for the drop-in tests only
# (test/upstream): `make demo` (NO_UPSTREAM=1 via tools-cluster) leaves it out.
if [[ -z "${NO_UPSTREAM:-}" ]]; then
	build aws-cloud-controller-manager "${upstream_aws_version}" "${upstream_aws_dir}" \
		k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager \
		"3 to 10 minutes on 2 cores, depending on load" --version "Kubernetes ${upstream_aws_version}" -ldflags="${upstream_aws_ldflags}"
fi

echo "kube-apiserver: ${out_dir}/kube-apiserver-${kube_version}"
echo "etcd:           ${out_dir}/etcd-${etcd_version}"
[[ -n "${NO_HELM:-}" ]] || echo "helm:           ${out_dir}/helm-${helm_version}"
[[ -n "${NO_UPSTREAM:-}" ]] || echo "aws-cloud-controller-manager: ${out_dir}/aws-cloud-controller-manager-${upstream_aws_version}"
