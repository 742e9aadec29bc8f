"""Moving files: resumable verified downloads (download), what `gputui push` will do
(upload_plan) and how much each channel keeps in flight (link_sizes)."""
