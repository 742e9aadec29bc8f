"""Files through the probe channel for boxes that refuse SFTP (filexfer, filexfer_write), and
the facts the shutdown checklist reads from the box's disks (checklist_facts)."""
