"""Applications built on the tuner: DP-SGD (:mod:`.dpsgd`), the demo job (:mod:`.demo`), private linear
regression with Generalized PTR (:mod:`.ptr`)."""
