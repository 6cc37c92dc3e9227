"""Progress reporting with Python conventions: a callable, tqdm when installed, else silence."""


def callback(progress, total, desc):
    """Turn ``progress=`` into a ``(done, total)`` callable and a closer.

    ``progress`` may be ``None`` (a tqdm bar on a terminal when tqdm is installed, else
    silent), ``False`` (silent), ``True`` (tqdm, an ImportError when it is missing) or a callable
    ``f(done, total)``.
    """
    if progress is False:
        return None, lambda: None
    if callable(progress):
        return progress, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress is True:
            raise
        return None, lambda: None
    # disable=None: tqdm draws only on a terminal, as the CLI's bar does.
    bar = tqdm(total=total, desc=desc, unit=("photons" if desc == "propagating" else desc), disable=None if progress is None else False)

    def update(done, total):
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    return update, bar.close
