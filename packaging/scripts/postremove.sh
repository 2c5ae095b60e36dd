#!/bin/sh
# polyccm postremove (dpkg postrm / rpm %postun).
#
# Makes systemd forget the removed unit. The polyccm user and group stay:
# files it owned (logs, a kubeconfig) may remain, and a later user with the
# same id must not inherit them.
set -e

case "$1" in
remove | purge | 0) ;;
*) exit 0 ;;
esac

if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || true
fi
exit 0
