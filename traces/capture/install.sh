#!/bin/bash
# install-krita: a large application installed with apt from a local package
# repository on the guest's second, untraced disk (3DMark's storage test: game
# install). apt-get resolves, dpkg unpacks and configures Krita and every
# dependency the guest lacks (the .debs were downloaded by build-guest.sh into
# /mnt/data/repo); dpkg's fsyncs are in the trace, and the trace ends when
# writeback is done and the disk quiet 3 s. Afterwards (untraced) the packages
# are purged again so the capture can be repeated on the same image.
source "$(dirname "$0")/guest-common.sh"
guest_attach
guest_boot
gx 'cd /etc/apt/sources.list.d && cp local-repo.list.disabled local-repo.list &&
    apt-get -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=/etc/apt/sources.list.d update >/dev/null &&
    apt-get -s install --no-install-recommends krita | grep -c "^Inst"' | sed 's/^/packages to install: /'
count=$(gx 'ls /mnt/data/repo/*.deb | wc -l'); mb=$(gx 'du -cm /mnt/data/repo/*.deb | tail -1 | cut -f1')
guest_cold
guest_settle 3 300
guest_capture install-krita install \
  "apt-get install krita from a local repository on a second disk: ${count} packages (${mb} MB of .deb) unpacked and configured by dpkg" \
  bash -c "source $CAPTURE_DIR/guest-common.sh; trap - EXIT; LOOP=$LOOP
    gx 'DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=/etc/apt/sources.list.d install -y --no-install-recommends krita >/tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }' && guest_settle 3 900"
gx 'tail -3 /tmp/install.log; DEBIAN_FRONTEND=noninteractive apt-get purge -y --autoremove krita krita-data >/dev/null 2>&1; rm -f /etc/apt/sources.list.d/local-repo.list; apt-get clean' || true
