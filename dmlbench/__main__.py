from dmlbench.cli import main

main()
