"""The shared public datasets (SOURCES.md), by the short names the benchmarks and the rule learning use."""

SHARED = {
    "retail": "retail.dat.gz",
    "mushroom": "mushroom.dat.gz",
    "chess": "chess.dat.gz",
    "adult": "adult.data.gz",
    "ml-latest": "ml-latest-small_ratings.csv.gz",
    "groceries": "groceries.csv.gz",
    "lastfm": "hetrec2011-lastfm-2k_user_artists.dat.gz",
}
