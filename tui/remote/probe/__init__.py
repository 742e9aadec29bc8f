"""The probe as the laptop handles it: the zipapp it builds (bundle), the client of the box's
daemon (client) and the files it fetches through it (files)."""
