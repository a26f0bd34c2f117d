"""What ``clinconsensus-eval`` commands do beyond reading their arguments: re-grading, judge
agreement, SFT export (``tools``), the audit of a cheap judge (``audit``) and the estimate of a
run's judge calls (``estimate``). The top layer: they may import every other part of the package
(``docs/architecture.md``); ``cli`` parses the arguments and calls them."""
