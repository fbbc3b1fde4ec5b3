"""Applications built on the tuner: DP-SGD ([`dpsgd`][privselect.apps.dpsgd]), the demo job ([`demo`][privselect.apps.demo]), private linear
regression with Generalized PTR (`ptr`)."""
