#!/bin/sh
# polyccm postinstall (dpkg postinst / rpm %post).
#
# Makes systemd see the new or changed unit. It does not enable or start
# polyccm: a cloud-controller-manager needs its cloud, credentials and
# kubeconfig configured first, and a misconfigured one can taint or delete
# Nodes. On an upgrade, a running polyccm is restarted onto the new binary.
set -e

# dpkg: "configure" and the previously configured version ("" on a first
# install); rpm: the number of installed instances, 1 on a first install.
case "$1" in
configure) if [ -n "$2" ]; then action=upgrade; else action=install; fi ;;
1) action=install ;;
[0-9]*) action=upgrade ;;
*) action=reload ;; # dpkg's abort-*: the old unit is back in place
esac

# Only where systemd is the running init: not in a chroot, an image build,
# a container or an install into another root (DPKG_ROOT).
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
	if [ "$action" = upgrade ]; then
		systemctl try-restart polyccm.service || true
	fi
fi

if [ "$action" = install ]; then
	cat <<'MSG'
polyccm is installed but not enabled. Configure it first:
  /etc/polyccm/ccm.yaml   the cloud driver, its credentials, the kubeconfig
  /etc/default/polyccm    extra POLYCCM_* environment (optional)
Check it with: polyccm config validate --config /etc/polyccm/ccm.yaml
Then start it: systemctl enable --now polyccm
MSG
fi
exit 0
