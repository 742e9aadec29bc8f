"""Files to and from the box: downloads (pull), uploads over SFTP (push), through the probe
channel where SFTP is refused (push_probe), and spread over parallel channels (push_spread)."""
