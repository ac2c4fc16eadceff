"""Planted-fact conversations in six languages (the demo's approach, per language).

A user chats with an assistant over about six weeks: small talk, generic advice, and,
scattered among it, sixteen facts a memory should keep (names, numbers, dates, places,
codes). Each fact has a needle (:mod:`.planted`) that appears only where the fact is
stated. The texts were written for this purpose in English, Turkish, German, Spanish,
French and Russian; the structure (which fact, which filler, when) comes from a seeded
random generator, so every run gets the same conversations.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..messages import Message
from .planted import PlantedChat, PlantedFact

__all__ = ["LANGUAGE_CODES", "language_chat", "language_chats"]


@dataclass(frozen=True)
class _Script:
    user: str
    facts: tuple[tuple[str, str], ...]  # (user line, needle)
    asks: tuple[str, ...]  # small talk from the user
    advice: tuple[str, ...]  # long generic assistant replies
    acks: tuple[str, ...]  # short assistant acknowledgements


_SCRIPTS: dict[str, _Script] = {
    "en": _Script(
        "Maya",
        (
            ("My sister Ingrid is coming to stay with us next month.", "Ingrid"),
            ("She lands on 14 March on flight LH 2417 from Oslo.", "LH 2417"),
            ("Our dog Biscuit needs a sitter while we are away.", "Biscuit"),
            ("Please remember that I am allergic to hazelnuts.", "hazelnuts"),
            ("Our favourite restaurant is Trattoria Lupo by the river.", "Trattoria Lupo"),
            ("The kitchen renovation budget is 18,500 euros, not a cent more.", "18,500"),
            ("I start a new job at Northwind Labs on 1 April.", "Northwind Labs"),
            ("My partner Tomasz is handling the movers.", "Tomasz"),
            ("We are moving to Ljubljana in the summer.", "Ljubljana"),
            ("I signed up for the half marathon in Vienna in April.", "Vienna"),
            ("The dentist appointment is on 3 April at 9:30.", "9:30"),
            ("The booking reference for the cabin is QX7-552.", "QX7-552"),
            ("My daughter Lena starts piano lessons on Thursdays.", "Lena"),
            ("We bought a blue Skoda Octavia last weekend.", "Skoda Octavia"),
            ("My favourite author is Ursula Le Guin.", "Le Guin"),
            ("Our anniversary is on 2 June, nine years together.", "2 June"),
        ),
        (
            "How are you today?", "What's a good podcast for the commute?",
            "I'm so tired this week.", "Any tips for sleeping better?",
            "What should I cook tonight?", "Tell me a fun fact.",
            "I need some motivation to exercise.", "How do I stay focused at work?",
            "Can you suggest a film for the weekend?", "Is it going to rain, do you think?",
        ),
        (
            "That's a good question. It depends on your routine, but small, steady steps "
            "usually work better than big changes. Start with something easy, keep it up "
            "for a week, and adjust from there.",
            "Many people find it helps to plan the day the evening before, to keep the "
            "phone in another room, and to take a short walk after lunch. Try one of these "
            "at a time and see what sticks.",
            "There are plenty of options. If you tell me a little more about what you "
            "enjoy, I can narrow it down, but a simple choice that you can repeat often is "
            "usually the best place to start.",
            "Honestly, rest matters more than most people think. A regular bedtime, less "
            "screen light in the evening and a bit of daylight in the morning make a real "
            "difference within a couple of weeks.",
            "It sounds like a busy week. Be kind to yourself: pick the two things that "
            "matter most today, do those well, and let the rest wait until tomorrow.",
        ),
        ("Noted.", "Got it, thanks for telling me.", "Understood.", "I'll remember that."),
    ),
    "tr": _Script(
        "Elif",
        (
            ("Kız kardeşim Zeynep gelecek ay bizde kalmaya geliyor.", "Zeynep"),
            ("14 Mart'ta Ankara'dan TK 2417 sefer sayılı uçakla geliyor.", "TK 2417"),
            ("Biz yokken köpeğimiz Pamuk'a bakacak birine ihtiyacımız var.", "Pamuk"),
            ("Lütfen unutma, fındığa alerjim var.", "fındığa"),
            ("En sevdiğimiz restoran nehir kenarındaki Lokanta Defne.", "Lokanta Defne"),
            ("Mutfak tadilatı bütçesi 18.500 lira, bir kuruş fazla değil.", "18.500"),
            ("1 Nisan'da Kuzeyrüzgarı Yazılım'da yeni işime başlıyorum.", "Kuzeyrüzgarı"),
            ("Eşim Murat nakliyecilerle ilgileniyor.", "Murat"),
            ("Yazın İzmir'e taşınıyoruz.", "İzmir"),
            ("Nisan'da Antalya yarı maratonuna kaydoldum.", "Antalya"),
            ("Diş randevusu 3 Nisan saat 9:30'da.", "9:30"),
            ("Dağ evinin rezervasyon kodu QX7-552.", "QX7-552"),
            ("Kızım Defne perşembe günleri piyano dersine başlıyor.", "Defne perşembe"),
            ("Geçen hafta sonu mavi bir Fiat Egea aldık.", "Fiat Egea"),
            ("En sevdiğim yazar Sabahattin Ali.", "Sabahattin Ali"),
            ("Evlilik yıldönümümüz 2 Haziran, dokuz yıldır birlikteyiz.", "2 Haziran"),
        ),
        (
            "Bugün nasılsın?", "İşe giderken dinlemek için iyi bir podcast önerir misin?",
            "Bu hafta çok yorgunum.", "Daha iyi uyumak için önerin var mı?",
            "Bu akşam ne pişirsem?", "Bana ilginç bir bilgi söyle.",
            "Spor yapmak için motivasyona ihtiyacım var.", "İşte nasıl odaklanırım?",
            "Hafta sonu için bir film önerir misin?", "Sence yağmur yağacak mı?",
        ),
        (
            "Güzel bir soru. Bu senin günlük düzenine bağlı, ama küçük ve istikrarlı "
            "adımlar genellikle büyük değişikliklerden daha iyi sonuç verir. Kolay bir "
            "şeyle başla, bir hafta devam et, sonra gerektiği gibi ayarla.",
            "Birçok kişi günü bir önceki akşam planlamanın, telefonu başka bir odada "
            "tutmanın ve öğle yemeğinden sonra kısa bir yürüyüşün işe yaradığını söylüyor. "
            "Bunları tek tek dene ve hangisinin kalıcı olduğuna bak.",
            "Pek çok seçenek var. Neleri sevdiğini biraz daha anlatırsan seçenekleri "
            "daraltabilirim, ama sık tekrarlayabileceğin basit bir seçim genellikle en "
            "iyi başlangıçtır.",
            "Açıkçası dinlenmek çoğu insanın düşündüğünden daha önemli. Düzenli bir yatma "
            "saati, akşamları daha az ekran ışığı ve sabahları biraz gün ışığı birkaç "
            "hafta içinde gerçek bir fark yaratır.",
            "Yoğun bir hafta gibi görünüyor. Kendine nazik davran: bugün en önemli iki "
            "işi seç, onları iyi yap ve gerisini yarına bırak.",
        ),
        ("Not aldım.", "Anladım, söylediğin için teşekkürler.", "Tamam.", "Bunu hatırlayacağım."),
    ),
    "de": _Script(
        "Jana",
        (
            ("Meine Schwester Ingrid kommt nächsten Monat zu uns zu Besuch.", "Ingrid"),
            ("Sie landet am 14. März mit dem Flug LH 2417 aus Oslo.", "LH 2417"),
            ("Unser Hund Bello braucht einen Sitter, solange wir weg sind.", "Bello"),
            ("Bitte denk daran, dass ich gegen Haselnüsse allergisch bin.", "Haselnüsse"),
            ("Unser Lieblingsrestaurant ist die Trattoria Lupo am Fluss.", "Trattoria Lupo"),
            ("Das Budget für die Küchenrenovierung liegt bei 18.500 Euro.", "18.500"),
            ("Am 1. April fange ich bei Nordwind Labs an.", "Nordwind Labs"),
            ("Mein Partner Tomasz kümmert sich um den Umzug.", "Tomasz"),
            ("Im Sommer ziehen wir nach Ljubljana.", "Ljubljana"),
            ("Ich habe mich für den Halbmarathon in Wien im April angemeldet.", "Wien"),
            ("Der Zahnarzttermin ist am 3. April um 9:30 Uhr.", "9:30"),
            ("Die Buchungsnummer für die Hütte ist QX7-552.", "QX7-552"),
            ("Meine Tochter Lena hat ab jetzt donnerstags Klavierunterricht.", "Lena"),
            ("Wir haben letztes Wochenende einen blauen Skoda Octavia gekauft.",
             "Skoda Octavia"),
            ("Meine Lieblingsautorin ist Ursula Le Guin.", "Le Guin"),
            ("Unser Hochzeitstag ist am 2. Juni, seit neun Jahren sind wir zusammen.",
             "2. Juni"),
        ),
        (
            "Wie geht es dir heute?", "Kennst du einen guten Podcast für den Arbeitsweg?",
            "Ich bin diese Woche so müde.", "Hast du Tipps, wie ich besser schlafe?",
            "Was soll ich heute Abend kochen?", "Erzähl mir etwas Interessantes.",
            "Ich brauche Motivation für Sport.", "Wie bleibe ich bei der Arbeit konzentriert?",
            "Kannst du mir einen Film fürs Wochenende empfehlen?", "Glaubst du, es regnet heute?",
        ),
        (
            "Gute Frage. Es hängt von deinem Alltag ab, aber kleine, regelmäßige Schritte "
            "funktionieren meistens besser als große Veränderungen. Fang mit etwas "
            "Einfachem an, bleib eine Woche dabei und pass es dann an.",
            "Vielen hilft es, den Tag am Vorabend zu planen, das Handy in einem anderen "
            "Zimmer zu lassen und nach dem Mittagessen kurz spazieren zu gehen. Probier "
            "eins nach dem anderen aus und schau, was bleibt.",
            "Da gibt es viele Möglichkeiten. Wenn du mir etwas mehr darüber erzählst, was "
            "dir gefällt, kann ich die Auswahl eingrenzen, aber eine einfache Sache, die "
            "du oft wiederholen kannst, ist meistens der beste Anfang.",
            "Ehrlich gesagt ist Erholung wichtiger, als die meisten denken. Eine feste "
            "Schlafenszeit, abends weniger Bildschirmlicht und morgens etwas Tageslicht "
            "machen schon nach ein paar Wochen einen echten Unterschied.",
            "Das klingt nach einer vollen Woche. Sei nachsichtig mit dir: Such dir die "
            "zwei wichtigsten Dinge für heute aus, mach sie gut und lass den Rest bis "
            "morgen liegen.",
        ),
        ("Notiert.", "Alles klar, danke für die Info.", "Verstanden.", "Das merke ich mir."),
    ),
    "es": _Script(
        "Lucía",
        (
            ("Mi hermana Carmen viene a quedarse con nosotros el mes que viene.", "Carmen"),
            ("Llega el 14 de marzo en el vuelo IB 2417 desde Oslo.", "IB 2417"),
            ("Nuestro perro Canelo necesita un cuidador mientras estamos fuera.", "Canelo"),
            ("Por favor, recuerda que soy alérgica a las avellanas.", "avellanas"),
            ("Nuestro restaurante favorito es la Trattoria Lupo junto al río.",
             "Trattoria Lupo"),
            ("El presupuesto de la reforma de la cocina es de 18.500 euros.", "18.500"),
            ("Empiezo un trabajo nuevo en Nortevento Labs el 1 de abril.", "Nortevento"),
            ("Mi pareja Tomás se encarga de la mudanza.", "Tomás"),
            ("En verano nos mudamos a Valencia.", "Valencia"),
            ("Me he apuntado a la media maratón de Sevilla en abril.", "Sevilla"),
            ("La cita con el dentista es el 3 de abril a las 9:30.", "9:30"),
            ("El código de reserva de la cabaña es QX7-552.", "QX7-552"),
            ("Mi hija Lena empieza clases de piano los jueves.", "Lena"),
            ("El fin de semana pasado compramos un Seat León azul.", "Seat León"),
            ("Mi autora favorita es Ursula Le Guin.", "Le Guin"),
            ("Nuestro aniversario es el 2 de junio, llevamos nueve años juntos.",
             "2 de junio"),
        ),
        (
            "¿Qué tal estás hoy?", "¿Me recomiendas un buen podcast para el trayecto?",
            "Estoy muy cansada esta semana.", "¿Algún consejo para dormir mejor?",
            "¿Qué cocino esta noche?", "Cuéntame algo curioso.",
            "Necesito motivación para hacer ejercicio.",
            "¿Cómo me concentro mejor en el trabajo?",
            "¿Me sugieres una película para el fin de semana?", "¿Crees que va a llover?",
        ),
        (
            "Buena pregunta. Depende de tu rutina, pero los pasos pequeños y constantes "
            "suelen funcionar mejor que los grandes cambios. Empieza por algo fácil, "
            "mantenlo una semana y luego ajusta.",
            "A mucha gente le ayuda planificar el día la noche anterior, dejar el móvil en "
            "otra habitación y dar un paseo corto después de comer. Prueba una cosa cada "
            "vez y mira qué funciona.",
            "Hay muchas opciones. Si me cuentas un poco más sobre lo que te gusta, puedo "
            "concretar, pero una elección sencilla que puedas repetir a menudo suele ser "
            "el mejor punto de partida.",
            "La verdad es que descansar importa más de lo que se piensa. Una hora fija "
            "para acostarse, menos pantallas por la noche y algo de luz por la mañana "
            "marcan la diferencia en un par de semanas.",
            "Parece una semana intensa. Sé amable contigo: elige las dos cosas más "
            "importantes de hoy, hazlas bien y deja el resto para mañana.",
        ),
        ("Anotado.", "Entendido, gracias por decírmelo.", "De acuerdo.", "Lo recordaré."),
    ),
    "fr": _Script(
        "Camille",
        (
            ("Ma sœur Ingrid vient passer quelques jours chez nous le mois prochain.",
             "Ingrid"),
            ("Elle atterrit le 14 mars avec le vol AF 2417 depuis Oslo.", "AF 2417"),
            ("Notre chien Filou a besoin d'une garde pendant notre absence.", "Filou"),
            ("N'oublie pas que je suis allergique aux noisettes.", "noisettes"),
            ("Notre restaurant préféré est la Trattoria Lupo au bord de la rivière.",
             "Trattoria Lupo"),
            ("Le budget de la rénovation de la cuisine est de 18 500 euros.", "18 500"),
            ("Je commence un nouveau travail chez Ventnord Labs le 1er avril.", "Ventnord"),
            ("Mon compagnon Tomasz s'occupe des déménageurs.", "Tomasz"),
            ("Nous déménageons à Lyon cet été.", "Lyon"),
            ("Je me suis inscrite au semi-marathon de Bordeaux en avril.", "Bordeaux"),
            ("Le rendez-vous chez le dentiste est le 3 avril à 9h30.", "9h30"),
            ("La référence de réservation du chalet est QX7-552.", "QX7-552"),
            ("Ma fille Léna commence le piano le jeudi.", "Léna"),
            ("Nous avons acheté une Peugeot 308 bleue le week-end dernier.", "Peugeot 308"),
            ("Mon autrice préférée est Ursula Le Guin.", "Le Guin"),
            ("Notre anniversaire de mariage est le 2 juin, neuf ans ensemble.", "2 juin"),
        ),
        (
            "Comment vas-tu aujourd'hui ?", "Tu connais un bon podcast pour le trajet ?",
            "Je suis très fatiguée cette semaine.", "Des conseils pour mieux dormir ?",
            "Qu'est-ce que je cuisine ce soir ?", "Raconte-moi une anecdote amusante.",
            "J'ai besoin de motivation pour faire du sport.",
            "Comment rester concentrée au travail ?",
            "Tu peux me conseiller un film pour le week-end ?", "Tu crois qu'il va pleuvoir ?",
        ),
        (
            "Bonne question. Cela dépend de ta routine, mais de petites étapes régulières "
            "marchent souvent mieux que de grands changements. Commence par quelque chose "
            "de facile, tiens une semaine, puis ajuste.",
            "Beaucoup de gens trouvent utile de planifier la journée la veille, de laisser "
            "le téléphone dans une autre pièce et de marcher un peu après le déjeuner. "
            "Essaie une chose à la fois et vois ce qui reste.",
            "Il y a beaucoup de possibilités. Si tu m'en dis un peu plus sur ce que tu "
            "aimes, je peux affiner, mais un choix simple que tu peux répéter souvent est "
            "généralement le meilleur point de départ.",
            "Honnêtement, le repos compte plus qu'on ne le pense. Une heure de coucher "
            "régulière, moins d'écrans le soir et un peu de lumière du jour le matin font "
            "une vraie différence en quelques semaines.",
            "On dirait une semaine chargée. Sois indulgente avec toi-même : choisis les "
            "deux choses les plus importantes aujourd'hui, fais-les bien et laisse le "
            "reste pour demain.",
        ),
        ("C'est noté.", "Compris, merci de me le dire.", "D'accord.", "Je m'en souviendrai."),
    ),
    "ru": _Script(
        "Аня",
        (
            ("Моя сестра Ирина приезжает к нам в следующем месяце.", "Ирина"),
            ("Она прилетает 14 марта рейсом SU 2417 из Осло.", "SU 2417"),
            ("Нашему псу Бублику нужна няня, пока нас не будет.", "Бублик"),
            ("Пожалуйста, помни, что у меня аллергия на фундук.", "фундук"),
            ("Наш любимый ресторан — «Тратториа Лупо» у реки.", "Лупо"),
            ("Бюджет на ремонт кухни — 18 500 евро, ни копейки больше.", "18 500"),
            ("1 апреля я выхожу на новую работу в «Северный ветер».", "Северный ветер"),
            ("Мой муж Томаш занимается грузчиками.", "Томаш"),
            ("Летом мы переезжаем в Казань.", "Казань"),
            ("Я записалась на полумарафон в Сочи в апреле.", "Сочи"),
            ("Приём у стоматолога 3 апреля в 9:30.", "9:30"),
            ("Код бронирования домика — QX7-552.", "QX7-552"),
            ("Моя дочь Лена начинает заниматься фортепиано по четвергам.", "Лена"),
            ("В прошлые выходные мы купили синюю Шкоду Октавию.", "Шкоду Октавию"),
            ("Мой любимый автор — Урсула Ле Гуин.", "Ле Гуин"),
            ("Наша годовщина — 2 июня, мы вместе девять лет.", "2 июня"),
        ),
        (
            "Как ты сегодня?", "Посоветуешь хороший подкаст для дороги на работу?",
            "Я так устала на этой неделе.", "Есть советы, как лучше спать?",
            "Что бы приготовить сегодня вечером?", "Расскажи мне интересный факт.",
            "Мне нужна мотивация для спорта.", "Как сосредоточиться на работе?",
            "Посоветуешь фильм на выходные?", "Как думаешь, будет дождь?",
        ),
        (
            "Хороший вопрос. Многое зависит от твоего распорядка, но маленькие регулярные "
            "шаги обычно работают лучше больших перемен. Начни с чего-то простого, "
            "продержись неделю, а потом подстрой.",
            "Многим помогает планировать день накануне вечером, оставлять телефон в "
            "другой комнате и немного гулять после обеда. Попробуй что-то одно и посмотри, "
            "что приживётся.",
            "Вариантов много. Если расскажешь чуть больше о том, что тебе нравится, я "
            "помогу сузить выбор, но простой вариант, который легко повторять, обычно "
            "лучшее начало.",
            "Честно говоря, отдых важнее, чем многие думают. Постоянное время отхода ко "
            "сну, меньше экранов вечером и немного дневного света утром дают заметную "
            "разницу уже через пару недель.",
            "Похоже, неделя насыщенная. Будь к себе добрее: выбери два самых важных дела "
            "на сегодня, сделай их хорошо, а остальное оставь на завтра.",
        ),
        ("Записала.", "Поняла, спасибо, что сказала.", "Хорошо.", "Я это запомню."),
    ),
}

#: The languages with a planted-fact conversation.
LANGUAGE_CODES = tuple(_SCRIPTS)
_START = datetime(2024, 2, 5, 8, 30, tzinfo=timezone.utc)


def language_chat(code: str, seed: int = 11, rounds: int = 8) -> PlantedChat:
    """The planted-fact conversation in ``code`` (see the module docstring): each fact
    is followed by ``rounds`` small-talk exchanges, spread over about six weeks."""
    script = _SCRIPTS[code]
    rng = random.Random(f"{code}:{seed}")
    messages: list[Message] = []
    facts: list[PlantedFact] = []
    when = _START
    for k, (line, needle) in enumerate(script.facts):
        when = _START + timedelta(days=k * 42 // len(script.facts), minutes=rng.randrange(600))
        messages.append(Message(role="user", name=script.user, content=line, timestamp=when))
        when += timedelta(seconds=20)
        messages.append(Message(role="assistant", content=rng.choice(script.acks),
                                timestamp=when))
        facts.append(PlantedFact(needle, script.user, f"fact {k + 1}"))
        for _ in range(rounds):
            when += timedelta(minutes=rng.randrange(1, 30))
            messages.append(Message(role="user", name=script.user,
                                    content=rng.choice(script.asks), timestamp=when))
            when += timedelta(seconds=30)
            messages.append(Message(role="assistant", content=rng.choice(script.advice),
                                    timestamp=when))
    speakers = {script.user.lower(): script.user, "assistant": "Assistant"}
    return PlantedChat(f"planted-{code}", code, messages, facts, speakers)


def language_chats() -> list[PlantedChat]:
    """One planted-fact conversation per language in :data:`LANGUAGE_CODES`."""
    return [language_chat(code) for code in LANGUAGE_CODES]
