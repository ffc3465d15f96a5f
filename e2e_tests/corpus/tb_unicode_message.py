raise ValueError("valeur non valide : « ça » — 值无效")
