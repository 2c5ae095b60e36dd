#!/bin/sh
# polyccm preremove (dpkg prerm / rpm %preun).
#
# On removal (not on upgrade) stops and disables the service, so no unit is
# left pointing at a missing binary.
set -e

# dpkg: "remove" (upgrades pass "upgrade"); rpm: the number of instances
# left after this one is removed, 0 on removal.
case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac

if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl disable --now polyccm.service || true
fi
exit 0
