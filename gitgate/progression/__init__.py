"""How a bundle moves through a pass when it does not go out all at once: rollout waves
(`rollouts`) and syncs with hooks (`hookphases`), each a pure step over (plan, what the last
pass recorded, what Karmada reports, now). What they persist between passes is a
`record.Progression`, kept in the bundle's inventory but owned here."""
