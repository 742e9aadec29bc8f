"""The box's watch over jobs, kept by the daemon with the laptop closed: what each job is
doing (jobwatch), how far it is (progress), what dies with the SSH login (protection), the
kernel's word on a crash (kernel_log), the clocks that delete data (clocks), the budget and
the loop that ties them (loop, box_watch)."""
