from tui.start import main

main()
