"""``clinconsensus-eval``'s commands, one module each (``add_arguments``, ``main``; registered in
``cli.commands()``): its flags, its work, what it prints and its exit code. The one layer that
imports the report (``docs/architecture.md``); what two commands share lives below them."""
