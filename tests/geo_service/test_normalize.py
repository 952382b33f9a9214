"""Normalization per language: both spellings of a name must give the same key."""

from __future__ import annotations

import pytest

from geo_service.normalize import Normalizer, fold


@pytest.mark.parametrize(
    ("vocabulary", "typed", "indexed"),
    [
        # German: straße / strasse / str. / str, umlauts and their ae/oe/ue spelling, Sankt / St.
        ((), "Hauptstr. 12", "Hauptstraße 12"),
        ((), "hauptstr", "Hauptstraße"),
        ((), "Hauptstrasse", "Hauptstraße"),
        ((), "Marienpl.", "Marienplatz"),
        ((), "Muenchner Freiheit", "Münchner Freiheit"),
        ((), "St.-Anna-Platz", "Sankt-Anna-Platz"),
        # Portuguese
        (("rua", "avenida"), "R. Augusta", "Rua Augusta"),
        (("rua", "avenida"), "Av. da Liberdade", "Avenida da Liberdade"),
        # French
        (("avenue", "boulevard"), "Bd des Moulins", "Boulevard des Moulins"),
        (("avenue", "boulevard"), "av. de la Costa", "Avenue de la Costa"),
        # Catalan: the same "av." means avinguda when the data says so
        (("carrer", "avinguda"), "C. Major", "Carrer Major"),
        (("carrer", "avinguda"), "Av. Meritxell", "Avinguda Meritxell"),
        (("carrer", "avinguda"), "l'Església", "l\u2019Església"),
        # Italian
        (("via", "piazza"), "V. Roma", "Via Roma"),
        (("via", "piazza"), "P.za Navona", "Piazza Navona"),
        # Finnish
        ((), "Aleksanterink. 5", "Aleksanterinkatu 5"),
        ((), "Mannerheimint.", "Mannerheimintie"),
    ],
)
def test_abbreviated_and_full_spellings_share_a_key(vocabulary: tuple[str, ...], typed: str, indexed: str) -> None:
    normalizer = Normalizer(vocabulary)
    assert normalizer.key(typed) == normalizer.key(indexed)


def test_ambiguous_abbreviation_follows_the_data() -> None:
    assert Normalizer({"avinguda"}).key("Av. Meritxell") == "avinguda meritxell"
    assert Normalizer({"avenida"}).key("Av. Meritxell") == "avenida meritxell"


def test_fold_removes_case_accents_and_special_letters() -> None:
    assert fold("ÉGLISE Straße Øster Łódź") == "eglise strasse oster lodz"


def test_control_characters_are_token_boundaries() -> None:
    assert Normalizer().words("Tal\x00 4\x1f") == ["tal", "4"]


def test_different_names_keep_different_keys() -> None:
    normalizer = Normalizer()
    assert normalizer.key("Maxburgstraße") != normalizer.key("Burgstraße")
    assert normalizer.key("Tal") != normalizer.key("Tal.a")
