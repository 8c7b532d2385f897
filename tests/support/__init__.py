"""What the tests share: builders of manifests and objects, test repos, clusters (in
memory, the emulator, a real server), clocks and schema checks. Test modules import from
here, never from each other."""
