"""One reconcile pass, composed in one place: observe the cluster once (`clusterview`), plan
purely over (checkout, view, now), then run (`onepass`); `settle` repeats passes until
Karmada reports the bundles ready. `plan --kubeconfig`, `apply`, `apply --wait` and `run`
all come through here."""
