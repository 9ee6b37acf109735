# make check-multihost: several hosts on one spool, on a real GlusterFS
# volume, then on a real CephFS mounted with ceph-fuse, then on NFSv4.1
# served by nfs-ganesha to three Linux kernels run as processes
# (tests/multihost; as root).  check-multihost-glusterfs,
# check-multihost-cephfs and check-multihost-nfs run one.
# Outside CI each may skip, saying why; with CI=true a skip is a failure.
MULTIHOST_SECONDS ?= 60

# One after the other, even under make -j: each lab takes the machine.
check-multihost: test-build
	@rc=0; for fs in glusterfs cephfs nfs; do \
		$(MAKE) --no-print-directory check-multihost-$$fs || rc=1; \
	done; exit $$rc

check-multihost-glusterfs check-multihost-cephfs check-multihost-nfs: test-build
	@tests/multihost -f $(@:check-multihost-%=%) -t $(MULTIHOST_SECONDS); \
	rc=$$?; \
	if [ $$rc -eq 0 ]; then echo "1 passed, 0 failed"; \
	elif [ $$rc -eq 77 ]; then echo "0 passed, 0 failed (skipped)"; \
	else echo "0 passed, 1 failed"; exit 1; fi

.PHONY: check-multihost check-multihost-glusterfs check-multihost-cephfs \
	check-multihost-nfs

# Claims per second with 1, 2 and 3 hosts on each shared file system beside
# the local disk (bench/multihost.sh; as root).
bench-multihost: all
	@bench/multihost.sh -f glusterfs && bench/multihost.sh -f cephfs

# What NFS's lookupcache=none costs: cycles through one spool-batch on
# one host of the NFS lab, with it and without (bench/nfscache.sh).
bench-nfs: all
	@bench/nfscache.sh

.PHONY: bench-multihost bench-nfs

# make torture-multihost RUNS=N: the stress N times on each file system,
# widened; it stops at the first run that fails and keeps what it had
# (tests/torture-multihost).  TORTURE_FS=nfs runs one file system.
RUNS ?= 10
TORTURE_FS ?= glusterfs cephfs nfs
torture-multihost: test-build
	@tests/torture-multihost $(RUNS) $(MULTIHOST_SECONDS) $(TORTURE_FS)

.PHONY: torture-multihost
