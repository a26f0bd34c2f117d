"""``python -m clinconsensus_tasks.stand_in``: run the stand-in server (``--help`` lists the model-name words)."""

from clinconsensus_tasks.stand_in.server import main

main()
