from pgvet.cli import main

main()
