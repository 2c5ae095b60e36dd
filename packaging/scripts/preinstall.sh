#!/bin/sh
# polyccm preinstall (dpkg preinst / rpm %pre).
#
# Creates the system user and group polyccm that the unit runs as, before
# the files are unpacked, so /etc/polyccm/ccm.yaml can be root:polyccm 0640.
# Idempotent: an existing user or group is left as it is.
set -e

# An install into another root with dpkg --root --force-script-chrootless
# runs this script on the host with DPKG_ROOT set: the host's users are not
# the target's, so leave them alone. Without root there is nothing to create.
if [ -n "${DPKG_ROOT:-}" ]; then
	echo "polyccm: installing into $DPKG_ROOT: not creating the polyccm user there" >&2
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "polyccm: not root: not creating the polyccm user" >&2
	exit 0
fi

case "$1" in
abort-upgrade) exit 0 ;; # dpkg: a failed upgrade is being rolled back
esac

shell=/bin/false
for s in /usr/sbin/nologin /sbin/nologin; do
	if [ -x "$s" ]; then
		shell=$s
		break
	fi
done

# groupadd and useradd (shadow) are on every Debian (package passwd,
# priority required) and RPM distribution (shadow-utils).
if ! getent group polyccm >/dev/null; then
	groupadd --system polyccm
fi
if ! getent passwd polyccm >/dev/null; then
	useradd --system --gid polyccm --no-create-home --home-dir /nonexistent \
		--shell "$shell" --comment "polyccm cloud-controller-manager" polyccm
fi
exit 0
