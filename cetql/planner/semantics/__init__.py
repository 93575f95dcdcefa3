"""The semantic stage: binding names (`bind`), the pattern's template
(`template`), predicate classification (`classify`), and the typed IR they
produce (`ir`)."""
