"""Jobs as the laptop shows them: tmux panel rows (tmux_rows), watched jobs with their costs
(lines), the box's clocks (clock_lines) and the process tree (proc_tree)."""
