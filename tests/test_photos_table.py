"""benchmarks/photos/equal_time.py's table: with several seeds it shows the median and each seed's figure, so
a median is not read as one run's result."""

from benchmarks.photos.equal_time import print_table


def record(run, seed, fid, updates, regions=27):
    return {
        "run": run,
        "seed": seed,
        "fid": fid,
        "last_fid": fid + 0.1,
        "fid_at_floor_size": None,
        "x_floor": fid / 0.4,
        "photos_covered": 3,
        "num_photos": 3,
        "regions_covered": regions,
        "num_regions": 27,
        "updates": updates,
        "wall_s": 900.0,
        "d_gap": 0.05,
    }


def rows_of(out):
    return {line.split(" | ")[0].strip("| "): line.split(" | ") for line in out.splitlines() if line.startswith("| ")}


def test_several_seeds_show_the_median_and_each_seed_in_seed_order(capsys):
    records = [record("auto", 2, 2.96, 5422, 26), record("auto", 1, 3.26, 5389), record("dcgan", 1, 3.51, 8234)]
    records.append({"run": "real crops", "fid": 0.16, "num_photos": 3, "num_regions": 27})
    print_table(records, ["auto", "dcgan"])
    rows = rows_of(capsys.readouterr().out)
    assert rows["auto"][1] == "1, 2"
    assert rows["auto"][2] == "3.11 (3.26, 2.96)"
    assert rows["auto"][8] == "5,406 (5,389, 5,422)"
    # coverage: each seed's count where they differ, one figure where they agree
    assert rows["auto"][7] == "27, 26 of 27" and rows["auto"][6] == "3/3"
    # one seed: its figure alone; a field no run has: a dash
    assert rows["dcgan"][1] == "1" and rows["dcgan"][2] == "3.51" and rows["dcgan"][4] == "-"
    assert rows["real crops"][1] == "-" and rows["real crops"][2] == "0.16" and rows["real crops"][6] == "-"
